import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startDevServer } from '../../worker/temporal-cli';
import { parseCommand } from '../arguments';
import { FailureType } from '../../common/failure-types';
import { CliError, UsageError } from '../errors';
import { portIsFree } from '../../worker/free-port';
import { SERVER_SYNTAX } from '../syntax';

/** The Temporal dev server with a SQLite file under .patchloop/ and its web UI, until Ctrl-C. */
export async function serverCommand(args: string[], print: (line: string) => void): Promise<undefined> {
  const { values } = parseCommand(args, SERVER_SYNTAX);
  const port = Number(values.port ?? 7233);
  const uiPort = Number(values['ui-port'] ?? port + 1000);
  // The health check would reach whatever already listens there and report success: check first.
  for (const [flag, value] of [
    ['--port', port],
    ['--ui-port', uiPort],
  ] as const) {
    if (!Number.isInteger(value) || value < 1 || value > 65535)
      throw new UsageError(`${flag} must be a port number\nusage: ${SERVER_SYNTAX.usage}`);
    if (!(await portIsFree(value)))
      throw new CliError(
        `port ${value} is in use (another Temporal server?): choose another with ${flag}`,
        FailureType.PortInUse,
      );
  }
  mkdirSync('.patchloop', { recursive: true });
  const server = await startDevServer({
    port,
    uiPort,
    headless: false,
    dbFile: values.db ?? join('.patchloop', 'temporal.db'),
  });
  print(`Temporal dev server on ${server.address}; web UI: ${server.uiUrl}`);
  print('Ctrl-C stops it.');
  await new Promise<void>((resolve) => {
    const stop = () => void server.stop().then(resolve);
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    server.process.once('exit', () => resolve());
  });
  return undefined;
}
