import type { PatchloopClient } from '../../client/patchloop-client';
import { configFromEnvironment } from '../../config/environment';
import { createPatchloopGateway, listen } from '../../gateway/gateway';
import { DEFAULT_PRINCIPAL_LIMITS } from '../../gateway/rate-limits';
import { ensureSearchAttributes } from '../../worker/search-attributes';
import { agentsFromFile } from '../agents-file';
import { countOption, parseCommand, portOption } from '../arguments';
import { SERVE_SYNTAX } from '../syntax';
import { keysFileOf } from './keys';
import { untilInterrupted } from '../interrupt';

/** `patchloop serve`: the gateway (docs/gateway.md) until Ctrl-C. */
export async function serveCommand(
  client: PatchloopClient,
  args: string[],
  print: (line: string) => void,
): Promise<unknown> {
  const { values } = parseCommand(args, SERVE_SYNTAX);
  const keysFile = keysFileOf(values['keys-file'], SERVE_SYNTAX.usage);
  const port = portOption(values.port, 8400, SERVE_SYNTAX.usage);
  const limits = {
    runsPerMinute: countOption(
      values['runs-per-minute'],
      '--runs-per-minute',
      DEFAULT_PRINCIPAL_LIMITS.runsPerMinute,
      SERVE_SYNTAX.usage,
    ),
    concurrentRuns: countOption(
      values['concurrent-runs'],
      '--concurrent-runs',
      DEFAULT_PRINCIPAL_LIMITS.concurrentRuns,
      SERVE_SYNTAX.usage,
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
  const allowedHosts = (values['allowed-hosts'] ?? '')
    .split(',')
    .map((host) => host.trim())
    .filter((host) => host !== '');
  const { app } = createPatchloopGateway({ client, keysFile, agents, limits, log, allowedHosts });
  const server = await listen(app, values.host ?? '127.0.0.1', port);
  print(`patchloop gateway at ${server.url} (agents: ${agents.map((agent) => agent.name).join(', ')})`);
  await untilInterrupted();
  await server.close();
  return undefined;
}
