import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { referencePython, testVenv } from './reference';

/** test/support/python_mcp_server.py: an MCP server written with Python's `mcp` package (FastMCP). */
export const pythonMcpScript = join(__dirname, 'python_mcp_server.py');

/**
 * The test venv's Python, with the `mcp` package that scripts/setup.sh installs; a missing one fails
 * the test, never skips it.
 */
export function pythonWithMcp(): string {
  if (!existsSync(referencePython))
    throw new Error(
      `test venv missing at ${referencePython}: run "bash scripts/setup.sh" (the test command does this)`,
    );
  const check = spawnSync(referencePython, ['-c', 'import mcp'], { encoding: 'utf8' });
  if (check.status !== 0)
    throw new Error(
      `Python's mcp package is missing in ${testVenv}: run "bash scripts/setup.sh" (${check.stderr.trim()})`,
    );
  return referencePython;
}

/** The agent's `mcp_servers` entry of the Python server; `env` reaches the server (PY_MCP_JOURNAL, ...). */
export function pythonMcpServer(extra: Record<string, unknown> = {}) {
  return { name: 'python', command: pythonWithMcp(), args: [pythonMcpScript], ...extra };
}
