import { NotifySettings, type NotifySettingsInput } from '../runtime';
import { UsageError } from './errors';

/**
 * `--notify-url` and `--notify-secret-env` (of `run` and `schedule create`): both or neither, checked as
 * a run's input checks them; `usage` is the command's, for the error.
 */
export function notifyOptions(
  url: string | undefined,
  secretEnv: string | undefined,
  usage: string,
): NotifySettingsInput | undefined {
  if (url === undefined && secretEnv === undefined) return undefined;
  if (url === undefined || secretEnv === undefined)
    throw new UsageError(`--notify-url and --notify-secret-env go together\nusage: ${usage}`);
  const parsed = NotifySettings.safeParse({ url, secret_env: secretEnv });
  if (!parsed.success) {
    const problem =
      parsed.error.issues[0]!.path[0] === 'url'
        ? '--notify-url must be an http:// or https:// URL'
        : '--notify-secret-env must be an environment variable name (letters, digits and _)';
    throw new UsageError(`${problem}\nusage: ${usage}`);
  }
  return { url, secret_env: secretEnv };
}
