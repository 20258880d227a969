import { readFileSync } from 'node:fs';
import { configFromEnvironment } from '../../config/environment';
import { startCodecServer, type CodecServerAccess } from '../../storage/codec-server';
import { EncryptionCodec } from '../../storage/encryption-codec';
import { parseCommand, portOption } from '../arguments';
import { CliErrorType } from '../../common/cli-error-types';
import { CliError, UsageError } from '../errors';
import { CODEC_SERVER_SYNTAX } from '../syntax';

/** Who may call the server, from PATCHLOOP_CODEC_TOKEN, --token-file or --allow-unauthenticated (one of them). */
function accessFrom(values: { 'token-file'?: string; 'allow-unauthenticated'?: boolean }): CodecServerAccess {
  const fromEnvironment = process.env['PATCHLOOP_CODEC_TOKEN'] || undefined;
  const file = values['token-file'];
  const given = [fromEnvironment && 'PATCHLOOP_CODEC_TOKEN', file && '--token-file'];
  if (values['allow-unauthenticated']) given.push('--allow-unauthenticated');
  const ways = given.filter(Boolean);
  if (ways.length > 1)
    throw new UsageError(`${ways.join(' and ')} both say who may call: keep one\nusage: ${CODEC_SERVER_SYNTAX.usage}`);
  if (values['allow-unauthenticated']) return { unauthenticated: true };
  const token = file !== undefined ? readFileSync(file, 'utf8').trim() : fromEnvironment;
  if (!token)
    throw new CliError(
      file !== undefined
        ? `${file} is empty: put the codec token in it (openssl rand -hex 32 > ${file})`
        : 'the codec server needs a token: set PATCHLOOP_CODEC_TOKEN (openssl rand -hex 32) or --token-file FILE; clients send it as Authorization: Bearer TOKEN',
      CliErrorType.InsecureCodecServer,
    );
  return { token };
}

export async function codecServerCommand(args: string[], print: (line: string) => void): Promise<undefined> {
  const { values } = parseCommand(args, CODEC_SERVER_SYNTAX);
  const port = portOption(values.port, 8888, CODEC_SERVER_SYNTAX.usage);
  const access = accessFrom(values);
  const encryption = configFromEnvironment().encryption;
  if (!encryption)
    throw new CliError('PATCHLOOP_ENCRYPTION_KEY is not set: there is nothing to decode', CliErrorType.NoEncryptionKey);
  const server = await startCodecServer(new EncryptionCodec(encryption), {
    port,
    host: values.host ?? '127.0.0.1',
    corsOrigin: values['cors-origin'] ?? 'http://localhost:8233',
    access,
  });
  const keys = `key ${encryption.active.id}${encryption.previous.length > 0 ? ` and ${encryption.previous.length} previous` : ''}`;
  const who =
    'token' in access
      ? 'requests need Authorization: Bearer <token>'
      : 'WITHOUT a token: anyone on this machine can decrypt';
  print(`codec server on ${server.url} (${keys}; ${who}); Ctrl-C stops it`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await server.close();
  return undefined;
}
