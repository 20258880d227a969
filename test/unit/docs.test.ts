import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { shellWords } from '../support/shell-words';
import { parseCommand, type CommandSyntax, type OptionSpec } from '../../src/cli/arguments';
import * as syntax from '../../src/cli/syntax';
import { RunEvent } from '../../src/runtime';

/**
 * The documentation checked against the code it describes: links lead somewhere, the reference pages
 * name every environment variable, schema and event the code has, every `patchloop` command the docs
 * show is one the CLI accepts, and the README stays a front door.
 */
const root = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const pages = ['README.md', 'ARCHITECTURE.md', ...readdirSync(join(root, 'docs')).map((name) => `docs/${name}`)].filter(
  (path) => path.endsWith('.md'),
);

/** Every file under `src` (TypeScript), for what the code reads. */
function sources(folder = join(root, 'src')): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sources(join(folder, entry.name))
      : entry.name.endsWith('.ts')
        ? [readFileSync(join(folder, entry.name), 'utf8')]
        : [],
  );
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  let fence = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fence = !fence;
    const heading = fence ? null : /^#{1,6} (.*)$/.exec(line);
    if (heading) found.add(anchor(heading[1]!));
  }
  return found;
}

/** The shell lines of the page's bash blocks, continuations joined and comments dropped. */
function shellLines(markdown: string): string[] {
  const lines: string[] = [];
  for (const block of markdown.matchAll(/```(?:bash|sh|shell)\n([\s\S]*?)```/g)) {
    const joined = block[1]!.replace(/\\\n\s*/g, ' ');
    for (const line of joined.split('\n')) {
      const command = line.replace(/\s+#\s.*$/, '').trim();
      if (command && !command.startsWith('#')) lines.push(command);
    }
  }
  return lines;
}

const commands = new Map<string, CommandSyntax<OptionSpec>>(
  (Object.values(syntax) as unknown[])
    .filter(
      (value): value is CommandSyntax<OptionSpec> => typeof value === 'object' && value !== null && 'usage' in value,
    )
    .map((value) => [value.usage.split(' ')[1]!, value]),
);

describe('the documentation', () => {
  it('links only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const page of pages) {
      const text = read(page);
      for (const link of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = link[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        const [path, hash] = target.split('#');
        const file = path ? resolve(root, dirname(page), path) : join(root, page);
        if (!existsSync(file)) broken.push(`${page}: ${target} (no such file)`);
        else if (hash && file.endsWith('.md') && !anchors(readFileSync(file, 'utf8')).has(hash))
          broken.push(`${page}: ${target} (no such heading in ${relative(root, file)})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('configuration names every environment variable the code reads', () => {
    const names = new Set(
      sources().flatMap((text) =>
        [...text.matchAll(/['"`]((?:PATCHLOOP|TEMPORAL|OPENAI|REDIS|OTEL)_[A-Z0-9_]+)['"`]/g)].map(
          (match) => match[1]!,
        ),
      ),
    );
    expect(names.size).toBeGreaterThan(30);
    const page = read('docs/configuration.md');
    expect([...names].filter((name) => !page.includes(name))).toEqual([]);
  });

  it('schemas lists every published schema file', () => {
    const page = read('docs/schemas.md');
    const files = readdirSync(join(root, 'schemas')).filter((name) => name.endsWith('.json'));
    expect(files.length).toBeGreaterThan(4);
    expect(files.filter((name) => !page.includes(`(../schemas/${name})`))).toEqual([]);
  });

  it('events names every event type a run emits', () => {
    const types = RunEvent.options.map((option) => option.shape.event_type.value);
    expect(types.length).toBeGreaterThan(20);
    const page = read('docs/events.md');
    expect(types.filter((type) => !page.includes(`\`${type}\``))).toEqual([]);
  });

  it('shows only patchloop commands the CLI accepts', () => {
    const refused: string[] = [];
    let checked = 0;
    for (const page of pages) {
      for (const line of shellLines(read(page))) {
        // A command put in the background (`serve ... &`) is checked as the command.
        for (const part of line.replace(/\s+&\s*$/, '').split(/\s*(?:&&|\|\||;|\|)\s*/)) {
          const argv = shellWords(part);
          const at = argv.findIndex(
            (word, index) => word === 'patchloop' && (index === 0 || argv[index - 1] === 'npx'),
          );
          if (at < 0 || argv[at + 1] === undefined) continue;
          const name = argv[at + 1]!;
          const command = commands.get(name);
          checked += 1;
          if (!command) {
            refused.push(`${page}: ${part} (no command '${name}')`);
            continue;
          }
          try {
            parseCommand(argv.slice(at + 2), command);
          } catch (error) {
            if ((error as Error).name !== 'HelpRequested')
              refused.push(`${page}: ${part} (${(error as Error).message.split('\n')[0]})`);
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(10);
    expect(refused).toEqual([]);
  });
});
