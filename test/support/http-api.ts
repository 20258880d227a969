import { execFile } from 'node:child_process';
import { expect, inject } from 'vitest';
import { repositoryRoot } from '../../support/repository';

/** A command's exit status and output, without throwing (the caller asserts). */
export function runCommand(command: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(command, args, { encoding: 'utf8', cwd: repositoryRoot }, (error, stdout, stderr) =>
      resolve({ code: error ? 1 : 0, stdout, stderr }),
    ),
  );
}

/**
 * Temporal's HTTP API with curl, as the docs show it, on the test's dev server (`path` after
 * `/api/v1/namespaces/default`). An answer with an error's `code` and `message` throws.
 */
export async function curl(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Record<string, unknown>> {
  const url = `${inject('temporalHttpUrl')}/api/v1/namespaces/default${path}`;
  const result = await runCommand('curl', [
    '-sS',
    '-X',
    method,
    url,
    ...(body !== undefined ? ['-H', 'Content-Type: application/json', '-d', JSON.stringify(body)] : []),
  ]);
  expect(result.code, result.stderr).toBe(0);
  const parsed = JSON.parse(result.stdout) as Record<string, unknown>;
  if (parsed['code'] !== undefined && parsed['message'] !== undefined) throw new Error(`${path}: ${result.stdout}`);
  return parsed;
}
