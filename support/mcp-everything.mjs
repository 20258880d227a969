// Starts @modelcontextprotocol/server-everything (a devDependency) over stdio, writing its pid to the file
// named by the first argument first, so a test can kill exactly this process.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import process from 'node:process';

const entry = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/dist/index.js');
if (process.argv[2]) writeFileSync(process.argv[2], String(process.pid));
process.argv = [process.argv[0], entry, 'stdio'];
await import(entry);
