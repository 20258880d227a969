import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startDevServer } from '../../worker/temporal-cli';
import { parseCommandArgs } from '../arguments';

const USAGE = 'patchloop server [--port 7233] [--ui-port 8233] [--db .patchloop/temporal.db]';

/** The Temporal dev server with a SQLite file under .patchloop/ and its web UI, until Ctrl-C. */
export async function serverCommand(args: string[], print: (line: string) => void): Promise<undefined> {
  const { values } = parseCommandArgs(
    args,
    { port: { type: 'string' }, 'ui-port': { type: 'string' }, db: { type: 'string' } },
    USAGE,
  );
  const port = Number(values.port ?? 7233);
  const uiPort = Number(values['ui-port'] ?? port + 1000);
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
