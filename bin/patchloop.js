#!/usr/bin/env node
// Entry point. In a checkout (a .git beside it) the sources run, so `npx patchloop` is never a stale
// build; an installed package (npm pack's tarball, or a git dependency, which npm builds with `prepare`)
// runs its compiled CLI, without tsx unless a user module is TypeScript.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const compiled = join(root, 'dist', 'src', 'cli', 'cli.js');
if (existsSync(compiled) && !existsSync(join(root, '.git'))) {
  require(compiled);
} else {
  // Both module systems, for the sources only: they require() each other and import() the commands. User
  // modules (--tools, --fake-model) are src/cli/user-module.ts's to load, compiled or not.
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
