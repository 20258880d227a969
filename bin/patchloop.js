#!/usr/bin/env node
// Installed entry point: runs the compiled CLI when built (npm install runs `prepare`), else the sources.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const compiled = join(__dirname, '..', 'dist', 'src', 'cli', 'cli.js');
if (existsSync(compiled)) {
  require(compiled);
} else {
  require('tsx/cjs');
  require(join(__dirname, '..', 'src', 'cli', 'cli.ts'));
}
