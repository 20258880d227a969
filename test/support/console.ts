import type { PatchloopClient } from '../../src/client/patchloop-client';
import { LIST_STATUSES } from '../../src/cli/syntax';
import { startConsole } from '../../src/console/server';

/** A console on a free loopback port for a test's client, signed in with `token`; `log` takes its lines. */
export function testConsole(client: PatchloopClient, token: string, log?: (line: string) => void) {
  return startConsole({
    client,
    host: '127.0.0.1',
    port: 0,
    access: { token, loopbackBind: true },
    temporalLink: () => null,
    states: LIST_STATUSES,
    ...(log ? { log } : {}),
  });
}
