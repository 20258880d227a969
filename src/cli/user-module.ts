import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The modules `--tools` and `--fake-model` load: TypeScript through tsx, JavaScript as Node loads it. */
const USER_MODULE_EXTENSIONS = ['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs'];
const TYPESCRIPT = ['.ts', '.mts', '.cts'];

let tsxRegistered: Promise<void> | undefined;

/**
 * Loads a module of the user's (tools, a model script) from its own folder, so its imports (`zod`,
 * `patchloop`) resolve from the user's project, never from the CLI's. The one place the CLI loads user
 * code, whether the CLI runs from sources (a checkout) or compiled (an installed package).
 *
 * A module loads the way Node would run it, by its format: an ES module through `import()` of its file
 * URL, a CommonJS one through `require`. `import()` hands any file to Node's ESM loader, even from this
 * CommonJS code: only tsx's ESM hooks teach that loader `.ts` (without them it fails with `Unknown file
 * extension ".ts"`), and a CommonJS module it loads from a hook's source gets the loader's own
 * `require`, which breaks on packages with circular requires (@grpc/grpc-js, under patchloop). So
 * TypeScript gets both of tsx's hooks, registered once before its first load, and CommonJS goes
 * through Node's CommonJS loader. JavaScript loads without tsx, by Node's own rules.
 */
export async function importUserModule(file: string): Promise<Record<string, unknown>> {
  const path = resolve(file);
  const extension = extname(path);
  if (!USER_MODULE_EXTENSIONS.includes(extension))
    throw new Error(`a module must end in ${USER_MODULE_EXTENSIONS.join(', ')}, not '${extension || file}'`);
  if (!existsSync(path)) throw new Error(`no such file: ${path}`);
  if (TYPESCRIPT.includes(extension)) await registerTsx();
  try {
    if (moduleFormat(path) === 'module') return (await import(pathToFileURL(path).href)) as Record<string, unknown>;
    const exports: unknown = createRequire(path)(path);
    // As `import()` shows a CommonJS module: its exports as the default export, and their names.
    return { ...(typeof exports === 'object' && exports !== null ? exports : {}), default: exports };
  } catch (error) {
    throw new Error(withHint(error));
  }
}

/** Node's rule: `.mts`/`.mjs` are ES modules, `.cts`/`.cjs` CommonJS, others as their package's `type` says. */
function moduleFormat(path: string): 'module' | 'commonjs' {
  const extension = extname(path);
  if (extension === '.mts' || extension === '.mjs') return 'module';
  if (extension === '.cts' || extension === '.cjs') return 'commonjs';
  for (let folder = dirname(path); ; folder = dirname(folder)) {
    const manifest = join(folder, 'package.json');
    if (existsSync(manifest)) {
      const type = (JSON.parse(readFileSync(manifest, 'utf8')) as { type?: unknown }).type;
      return type === 'module' ? 'module' : 'commonjs';
    }
    if (dirname(folder) === folder) return 'commonjs';
  }
}

function registerTsx(): Promise<void> {
  tsxRegistered ??= (async () => {
    (await import('tsx/esm/api')).register();
    (await import('tsx/cjs/api')).register();
  })();
  return tsxRegistered;
}

/** What a module exports under `name`; a CommonJS module's exports arrive as its default export. */
export function exportNamed(loaded: Record<string, unknown>, name: string): unknown {
  const fallback = loaded['default'];
  const inDefault =
    typeof fallback === 'object' && fallback !== null ? (fallback as Record<string, unknown>)[name] : undefined;
  return loaded[name] ?? inDefault;
}

/** The error's message, and what to do about the usual mistakes. */
function withHint(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown }).code;
  if (/Cannot use import statement outside a module|Unexpected token 'export'/.test(message))
    return `${message} (a .js module with import/export needs "type": "module" in its package.json, or the .mjs extension)`;
  const missing = /Cannot find (?:module|package) '([^']+)'/.exec(message)?.[1];
  if ((code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && missing && !/^[./]/.test(missing))
    return `${message.split('\n')[0]} (a module's imports resolve from its own folder: install ${missing} in its project, e.g. npm install ${missing.replace(/^(@[^/]+\/[^/]+|[^/]+).*$/, '$1')})`;
  if (code === 'ERR_UNKNOWN_FILE_EXTENSION')
    return `${message} (a JavaScript module cannot import TypeScript: give the CLI a .ts module)`;
  return message;
}
