// Measures the shape of src/: lines per folder, the longest functions, files importing a module.
import ts from 'typescript';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = process.argv[2] ?? 'src';
const target = process.argv[3] ?? 'run-state';
function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : path.endsWith('.ts') ? [path] : [];
  });
}
const files = walk(root);
const perFolder = new Map<string, number>();
const functions: Array<{ name: string; lines: number }> = [];
const importers: string[] = [];
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const folder = relative(root, file).split('/')[0]!;
  perFolder.set(folder, (perFolder.get(folder) ?? 0) + text.split('\n').length - 1);
  if (new RegExp(`from '[^']*${target}(\\.js)?'`).test(text)) importers.push(relative(root, file));
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      let name = (node as ts.FunctionDeclaration).name?.getText() ?? '';
      if (!name && ts.isVariableDeclaration(node.parent)) name = node.parent.name.getText();
      if (!name && ts.isPropertyAssignment(node.parent)) name = node.parent.name.getText();
      functions.push({ name: `${relative(root, file)}:${start + 1} ${name || '(anonymous)'}`, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
console.log('lines per folder');
for (const [folder, lines] of [...perFolder].sort((a, b) => b[1] - a[1]))
  console.log(`  ${folder.padEnd(12)} ${lines}`);
console.log(`total ${[...perFolder.values()].reduce((a, b) => a + b, 0)} in ${files.length} files`);
const layered = (f: { name: string }) => /^(workflows|activities|worker)\//.test(f.name);
console.log('10 longest functions (workflows/activities/worker)');
for (const f of functions
  .filter(layered)
  .sort((a, b) => b.lines - a.lines)
  .slice(0, 10))
  console.log(`  ${f.lines} ${f.name}`);
console.log(`over 80 lines there: ${functions.filter(layered).filter((f) => f.lines > 80).length}`);
console.log('10 longest functions (all src)');
for (const f of functions.sort((a, b) => b.lines - a.lines).slice(0, 10)) console.log(`  ${f.lines} ${f.name}`);
console.log(`files importing ${target}: ${importers.length}`);
console.log('  ' + importers.join(' '));
