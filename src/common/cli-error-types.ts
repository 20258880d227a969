/**
 * What the CLI reports of its own, beside the failure of a run (`FailureType`): the `type` of its
 * `{"error": {"type", "message"}}` with --json, and the first word of its error line. Scripts branch on
 * them, so a type is a contract: never rename one. None of them fails a run or an activity: they are
 * never built with `failure()`. The context core's errors (`compile`) are reported by kind, as
 * `ContextErrorType` in `context/errors.ts` says.
 */
export const CliErrorType = {
  // An unknown option, a missing argument, a bad value: exit status 2.
  UsageError: 'UsageError',
  // Temporal cannot be reached at its address.
  ConnectionError: 'ConnectionError',
  // `patchloop worker` without OPENAI_API_KEY, OPENAI_BASE_URL or --fake-model.
  NoProvider: 'NoProvider',
  NoEncryptionKey: 'NoEncryptionKey',
  // The codec server would let in whoever reaches it: no token (or a short one), or no token off loopback.
  InsecureCodecServer: 'InsecureCodecServer',
  PortInUse: 'PortInUse',
  // `patchloop server` (or the demo) found no Temporal CLI, or could not install it (--install-cli).
  TemporalCliNotFound: 'TemporalCliNotFound',
  // A configuration a worker refuses (ConfigurationError: an agent's tools, a tool's options, the agents file).
  BadConfiguration: 'BadConfiguration',
  ToolsNotLoaded: 'ToolsNotLoaded',
  // An id that names no run or session, a name that names no schedule.
  NotFound: 'NotFound',
  // `patchloop schedule create` of a name that is taken.
  AlreadyExists: 'AlreadyExists',
  // A command on a run that has already ended: exit status 4.
  RunEnded: 'RunEnded',
  // A run failed with no type of its own.
  RunFailed: 'RunFailed',
  // Input that fails its schema (a saved state given to `compile`, ...).
  InvalidInput: 'InvalidInput',
  InvalidJson: 'InvalidJson',
  // A file that cannot be read (ENOENT, EACCES, ...).
  ReadError: 'ReadError',
} as const;
export type CliErrorType = (typeof CliErrorType)[keyof typeof CliErrorType];
