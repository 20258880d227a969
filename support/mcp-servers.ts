import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { ChatRequestBody } from '../src/fake-model/server';
import { venvPython, repositoryRoot, testVenv } from './repository';

// Real MCP servers nobody on the project wrote, installed by the set-up (devDependencies and the test
// venv); a missing one fails the tests that use it, never skips them.
const resolve = createRequire(join(repositoryRoot, 'package.json')).resolve;

/** @modelcontextprotocol/server-everything's entry point. */
export const everythingEntry = resolve('@modelcontextprotocol/server-everything/dist/index.js');

/** Starts server-everything over stdio, its process writing its pid to the file named by its argument. */
export const everythingLauncher = join(__dirname, 'mcp-everything.mjs');

/** The agent's `mcp_servers` entry of server-everything over stdio (its pid written to `pidFile`). */
export function everythingStdio(pidFile: string, extra: Record<string, unknown> = {}) {
  return { name: 'everything', command: process.execPath, args: [everythingLauncher, pidFile], ...extra };
}

/** server-everything over streamable HTTP on this port (at /mcp), once it listens. */
export async function startEverythingHttp(port: number): Promise<ChildProcess> {
  const server = spawn(process.execPath, [everythingEntry, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((done, fail) => {
    const timer = setTimeout(() => fail(new Error('server-everything (HTTP) did not start')), 20_000);
    server.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`server-everything (HTTP) exited (${code}) before it listened on port ${port}`));
    });
    server.stderr!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('listening')) {
        clearTimeout(timer);
        done();
      }
    });
  });
  return server;
}

/** @modelcontextprotocol/server-filesystem's executable (run it with node and the allowed directories). */
export function filesystemServerBin(): string {
  const manifest = resolve('@modelcontextprotocol/server-filesystem/package.json');
  const { bin } = JSON.parse(readFileSync(manifest, 'utf8')) as { bin: Record<string, string> };
  return join(dirname(manifest), bin['mcp-server-filesystem']!);
}

/** support/python_mcp_server.py: an MCP server written with Python's `mcp` package (FastMCP). */
export const pythonMcpScript = join(__dirname, 'python_mcp_server.py');

/**
 * The test venv's Python, with the `mcp` package that scripts/setup.sh installs; a missing one fails
 * the test, never skips it.
 */
export function pythonWithMcp(): string {
  if (!existsSync(venvPython))
    throw new Error(`test venv missing at ${venvPython}: run "bash scripts/setup.sh" (the test command does this)`);
  const check = spawnSync(venvPython, ['-c', 'import mcp'], { encoding: 'utf8' });
  if (check.status !== 0)
    throw new Error(
      `Python's mcp package is missing in ${testVenv}: run "bash scripts/setup.sh" (${check.stderr.trim()})`,
    );
  return venvPython;
}

/** The agent's `mcp_servers` entry of the Python server; `env` reaches the server (PY_MCP_JOURNAL, ...). */
export function pythonMcpServer(extra: Record<string, unknown> = {}) {
  return { name: 'python', command: pythonWithMcp(), args: [pythonMcpScript], ...extra };
}

/** A stdio server's own listing, asked directly (to compare with what the model is offered). */
export async function listServerTools(command: string, args: string[], env?: Record<string, string>) {
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(new StdioClientTransport({ command, args, stderr: 'ignore', ...(env ? { env } : {}) }));
  try {
    return (await client.listTools()).tools;
  } finally {
    await client.close();
  }
}

/** A tool as a Chat Completions request offers it. */
export type OfferedTool = { type: string; function: { name: string; description: string; parameters: unknown } };

/** The tools a request to the model offered. */
export function offeredTools(body: ChatRequestBody): OfferedTool[] {
  return (body.tools as OfferedTool[] | undefined) ?? [];
}

/** The tool results a request to the model carried, in order. */
export function toolMessages(body: ChatRequestBody) {
  return (body.messages as Array<{ role: string; tool_call_id?: string; content?: unknown }>).filter(
    (message) => message.role === 'tool',
  );
}
