import type { PatchloopClient } from '../../client/patchloop-client';
import { configFromEnvironment } from '../../config/environment';
import { createPatchloopGateway, listen } from '../../gateway/gateway';
import { DEFAULT_PRINCIPAL_LIMITS } from '../../gateway/rate-limits';
import { ensureSearchAttributes } from '../../worker/search-attributes';
import { agentsFromFile } from '../agents-file';
import { parseCommand } from '../arguments';
import { UsageError } from '../errors';
import { SERVE_SYNTAX } from '../syntax';
import { keysFileOf } from './keys';
import { untilInterrupted } from '../interrupt';

function wholeNumber(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1)
    throw new UsageError(`${flag} must be a whole number >= 1\nusage: ${SERVE_SYNTAX.usage}`);
  return number;
}

/** `patchloop serve`: the gateway (docs/gateway.md) until Ctrl-C. */
export async function serveCommand(
  client: PatchloopClient,
  args: string[],
  print: (line: string) => void,
): Promise<unknown> {
  const { values } = parseCommand(args, SERVE_SYNTAX);
  const keysFile = keysFileOf(values['keys-file'], SERVE_SYNTAX.usage);
  const port = values.port === undefined ? 8400 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--port must be a port number\nusage: ${SERVE_SYNTAX.usage}`);
  const limits = {
    runsPerMinute: wholeNumber(values['runs-per-minute'], '--runs-per-minute', DEFAULT_PRINCIPAL_LIMITS.runsPerMinute),
    concurrentRuns: wholeNumber(
      values['concurrent-runs'],
      '--concurrent-runs',
      DEFAULT_PRINCIPAL_LIMITS.concurrentRuns,
    ),
  };
  const agents = await agentsFromFile(values.agents);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  // Runs started here carry PatchloopPrincipal from their start: the namespace must have it.
  const attributes = await ensureSearchAttributes(client.temporal.connection, configFromEnvironment().namespace, {
    info: log,
    warn: log,
  });
  if (!attributes.available)
    throw new Error('the gateway records who started each run in the search attribute PatchloopPrincipal (above)');
  const { app } = createPatchloopGateway({ client, keysFile, agents, limits, log });
  const server = await listen(app, values.host ?? '127.0.0.1', port);
  print(`patchloop gateway at ${server.url} (agents: ${agents.map((agent) => agent.name).join(', ')})`);
  await untilInterrupted();
  await server.close();
  return undefined;
}
