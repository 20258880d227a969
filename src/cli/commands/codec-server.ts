import { configFromEnvironment } from '../../config/environment';
import { startCodecServer } from '../../storage/codec-server';
import { EncryptionCodec } from '../../storage/encryption-codec';
import { parseCommand } from '../arguments';
import { FailureType } from '../../common/failure-types';
import { CliError, UsageError } from '../errors';
import { CODEC_SERVER_SYNTAX } from '../syntax';

export async function codecServerCommand(args: string[], print: (line: string) => void): Promise<undefined> {
  const { values } = parseCommand(args, CODEC_SERVER_SYNTAX);
  const port = Number(values.port ?? 8888);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--port must be a port number\nusage: ${CODEC_SERVER_SYNTAX.usage}`);
  const encryption = configFromEnvironment().encryption;
  if (!encryption)
    throw new CliError('PATCHLOOP_ENCRYPTION_KEY is not set: there is nothing to decode', FailureType.NoEncryptionKey);
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
