import { createKey, readKeysFile, revokeKeys } from '../../gateway/keys';
import { PRINCIPAL_NAME } from '../../runtime';
import { parseCommand } from '../arguments';
import { UsageError } from '../errors';
import { KEYS_SYNTAX } from '../syntax';
import { printTable } from '../table';

/** The keys file `--keys-file` or PATCHLOOP_KEYS_FILE names: both `keys` and `serve` need one. */
export function keysFileOf(given: string | undefined, usage: string): string {
  const file = given ?? process.env['PATCHLOOP_KEYS_FILE'];
  if (!file) throw new UsageError(`name the keys file: --keys-file FILE or PATCHLOOP_KEYS_FILE\nusage: ${usage}`);
  return file;
}

/** `patchloop keys create|list|revoke`: the gateway's API keys (docs/gateway.md). */
export async function keysCommand(args: string[], print: (line: string) => void): Promise<unknown> {
  const { values, positionals } = parseCommand(args, KEYS_SYNTAX);
  const file = keysFileOf(values['keys-file'], KEYS_SYNTAX.usage);
  const name = positionals['name'];
  switch (positionals['action']) {
    case 'create': {
      if (!name || !PRINCIPAL_NAME.test(name))
        throw new UsageError(
          `create takes the principal's name: 1 to 64 letters, digits, '.', '_', '-' or '@'\nusage: ${KEYS_SYNTAX.usage}`,
        );
      const { key, record } = createKey(file, name, { admin: values.admin ?? false });
      if (values.json) return { key, id: record.id, principal: record.principal, admin: record.admin };
      print(key);
      process.stderr.write(
        `key ${record.id} for ${record.principal}${record.admin ? ' (admin)' : ''}: shown this once, ${file} keeps its hash only\n`,
      );
      return undefined;
    }
    case 'list': {
      const keys = readKeysFile(file).keys.map(({ sha256: _hash, ...shown }) => shown);
      if (values.json) return keys;
      if (keys.length === 0) print(`no keys in ${file}`);
      else
        printTable(
          [
            ['ID', 'PRINCIPAL', 'SCOPE', 'CREATED', 'REVOKED'],
            ...keys.map((key) => [
              key.id,
              key.principal,
              key.admin ? 'admin' : 'own runs',
              key.created_at,
              key.revoked_at ?? '-',
            ]),
          ],
          print,
        );
      return undefined;
    }
    case 'revoke': {
      if (!name) throw new UsageError(`revoke takes a key id or a principal's name\nusage: ${KEYS_SYNTAX.usage}`);
      const revoked = revokeKeys(file, name);
      if (revoked === 0) throw new UsageError(`no live key with id or principal ${name} in ${file}`);
      if (values.json) return { revoked };
      print(`revoked ${revoked} key${revoked === 1 ? '' : 's'} of ${name}`);
      return undefined;
    }
    default:
      throw new UsageError(`keys takes create, list or revoke\nusage: ${KEYS_SYNTAX.usage}`);
  }
}
