import { randomBytes } from 'node:crypto';
import type { PatchloopClient } from '../../client/patchloop-client';
import { configFromEnvironment, workflowUiUrl } from '../../config/environment';
import { isLoopbackHost } from '../../config/loopback';
import { startConsole } from '../../console/server';
import { parseCommand, portOption } from '../arguments';
import { UsageError } from '../errors';
import { untilInterrupted } from '../interrupt';
import { CONSOLE_SYNTAX, LIST_STATUSES } from '../syntax';

type Print = (line: string) => void;

/** `patchloop console`: the web console on 127.0.0.1 (or where --host says, with a token) until Ctrl-C. */
export async function consoleCommand(client: PatchloopClient, args: string[], print: Print): Promise<unknown> {
  const { values } = parseCommand(args, CONSOLE_SYNTAX);
  const port = portOption(values.port, 8300, CONSOLE_SYNTAX.usage);
  const host = values.host ?? '127.0.0.1';
  const loopbackBind = isLoopbackHost(host.includes(':') && !host.startsWith('[') ? `[${host}]` : host);
  const given = process.env['PATCHLOOP_CONSOLE_TOKEN'] || undefined;
  if (!loopbackBind && !given)
    throw new UsageError(
      `listening on ${host} needs a token: set PATCHLOOP_CONSOLE_TOKEN (anyone who reaches the port would see and steer your runs)`,
    );
  if (given !== undefined && given.length < 16)
    throw new UsageError('PATCHLOOP_CONSOLE_TOKEN must have at least 16 characters');
  const token = given ?? randomBytes(24).toString('base64url');
  const config = configFromEnvironment();
  const server = await startConsole({
    client,
    host,
    port,
    access: { token, loopbackBind },
    temporalLink: (workflowId) => workflowUiUrl(config, workflowId),
    states: LIST_STATUSES,
    log: (line) => process.stderr.write(`${line}\n`),
  });
  print(`patchloop console at ${server.url}`);
  // The made-up token is this process's only: the person who started it signs in with the link.
  if (given === undefined) print(`to approve, reject, abort or send, sign in once: ${server.url}/login?token=${token}`);
  else print('actions need PATCHLOOP_CONSOLE_TOKEN: sign in at /login');
  await untilInterrupted();
  await server.close();
  return undefined;
}
