import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { findTemporalCli, startDevServer, temporalCliMissing } from '../../worker/temporal-cli';
import { installTemporalCli } from '../../worker/temporal-cli-install';
import { parseCommand } from '../arguments';
import { CliErrorType } from '../../common/cli-error-types';
import { CliError, UsageError } from '../errors';
import { portIsFree } from '../../worker/free-port';
import { SERVER_SYNTAX } from '../syntax';

/**
 * The Temporal dev server with a SQLite file under .patchloop/, its web UI and its HTTP API, until
 * Ctrl-C. The ports default to 7233, and beside it 8233 (UI) and 7243 (HTTP API).
 */
export async function serverCommand(args: string[], print: (line: string) => void): Promise<undefined> {
  const { values } = parseCommand(args, SERVER_SYNTAX);
  const port = Number(values.port ?? 7233);
  const uiPort = Number(values['ui-port'] ?? port + 1000);
  const httpPort = Number(values['http-port'] ?? port + 10);
  // The health check would reach whatever already listens there and report success: check first.
  for (const [flag, value] of [
    ['--port', port],
    ['--ui-port', uiPort],
    ['--http-port', httpPort],
  ] as const) {
    if (!Number.isInteger(value) || value < 1 || value > 65535)
      throw new UsageError(`${flag} must be a port number\nusage: ${SERVER_SYNTAX.usage}`);
    if (!(await portIsFree(value)))
      throw new CliError(
        `port ${value} is in use (another Temporal server?): choose another with ${flag}`,
        CliErrorType.PortInUse,
      );
  }
  const cli = await temporalCli(values['install-cli'] === true, print);
  mkdirSync('.patchloop', { recursive: true });
  const server = await startDevServer({
    cli,
    port,
    uiPort,
    httpPort,
    headless: false,
    dbFile: values.db ?? join('.patchloop', 'temporal.db'),
  });
  print(`Temporal dev server on ${server.address}; web UI: ${server.uiUrl}; HTTP API: ${server.httpUrl}`);
  print(`temporal CLI: ${cli}`);
  print('Ctrl-C stops it.');
  await new Promise<void>((resolve) => {
    const stop = () => void server.stop().then(resolve);
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    server.process.once('exit', () => resolve());
  });
  return undefined;
}

/** The `temporal` CLI the dev server runs: one found, else (asked to) one installed into the cache. */
export async function temporalCli(install: boolean, print: (line: string) => void): Promise<string> {
  const found = findTemporalCli();
  if (found) return found;
  if (!install) throw new CliError(temporalCliMissing(), CliErrorType.TemporalCliNotFound);
  try {
    return await installTemporalCli(print);
  } catch (error) {
    throw new CliError(
      `cannot install the Temporal CLI: ${(error as Error).message}`,
      CliErrorType.TemporalCliNotFound,
    );
  }
}
