#!/usr/bin/env node
// Entry point. In a checkout (a .git beside it) the sources run, so `npx patchloop` is never a stale
// build; an installed package runs its compiled CLI (npm install runs `prepare`).
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const compiled = join(root, 'dist', 'src', 'cli', 'cli.js');
if (existsSync(compiled) && !existsSync(join(root, '.git'))) {
  require(compiled);
} else {
  // Both module systems: the CLI loads its commands with import(), and tool modules may be TypeScript.
  import('tsx/esm/api').then(
    ({ register }) => {
      register();
      require('tsx/cjs');
      require(join(root, 'src', 'cli', 'cli.ts'));
    },
    (error) => {
      process.stderr.write(`error: cannot load tsx to run the sources (run 'npm install'): ${error.message}\n`);
      process.exitCode = 1;
    },
  );
}
