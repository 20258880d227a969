import { Connection } from '@temporalio/client';
import { PatchloopClient } from '../client/patchloop-client';
import { configFromEnvironment, connectionOptions } from '../config/environment';
import { temporalUnreachable } from './errors';

type Print = (line: string) => void;

/** Connects to Temporal, or says which address failed and what to do about it. */
async function connect(): Promise<PatchloopClient> {
  const config = configFromEnvironment();
  try {
    return PatchloopClient.on(await Connection.connect({ ...connectionOptions(config), connectTimeout: '5s' }), config);
  } catch (error) {
    throw temporalUnreachable(config.temporalAddress, error);
  }
}

/** Runs a command with a client of the configured Temporal service, closed when the command ends. */
export async function withClient(
  command: (client: PatchloopClient, args: string[], print: Print) => Promise<unknown>,
  args: string[],
  print: Print,
): Promise<unknown> {
  const client = await connect();
  try {
    return await command(client, args, print);
  } finally {
    await client.close();
  }
}
