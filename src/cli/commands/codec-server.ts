import { configFromEnvironment } from '../../config/environment';
import { startCodecServer } from '../../storage/codec-server';
import { EncryptionCodec } from '../../storage/encryption-codec';
import { parseCommand } from '../arguments';
import { CliError, UsageError } from '../errors';

export const CODEC_SERVER_SYNTAX = {
  usage: 'patchloop codec-server [--port 8888] [--host 127.0.0.1] [--cors-origin http://localhost:8233]',
  summary:
    "Temporal's remote codec endpoint for encrypted payloads (PATCHLOOP_ENCRYPTION_KEY and the previous keys): point the web UI or `temporal workflow show --codec-endpoint` at it to read plaintext. Until Ctrl-C.",
  options: { port: { type: 'string' }, host: { type: 'string' }, 'cors-origin': { type: 'string' } },
  positionals: [],
} as const;

export async function codecServerCommand(args: string[], print: (line: string) => void): Promise<undefined> {
  const { values } = parseCommand(args, CODEC_SERVER_SYNTAX);
  const port = Number(values.port ?? 8888);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--port must be a port number\nusage: ${CODEC_SERVER_SYNTAX.usage}`);
  const encryption = configFromEnvironment().encryption;
  if (!encryption)
    throw new CliError('PATCHLOOP_ENCRYPTION_KEY is not set: there is nothing to decode', 'NoEncryptionKey');
  const server = await startCodecServer(new EncryptionCodec(encryption), {
    port,
    host: values.host ?? '127.0.0.1',
    corsOrigin: values['cors-origin'] ?? 'http://localhost:8233',
  });
  print(
    `codec server on ${server.url} (key ${encryption.active.id}${encryption.previous.length > 0 ? ` and ${encryption.previous.length} previous` : ''}); Ctrl-C stops it`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await server.close();
  return undefined;
}
