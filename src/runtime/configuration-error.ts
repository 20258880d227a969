/**
 * A configuration a worker refuses: an agent's tools or routing, a tool's or a function's options. The
 * user's to fix, so the CLI shows its message alone (`BadConfiguration`), with no stack trace.
 */
export class ConfigurationError extends Error {
  override readonly name = 'ConfigurationError';
}

/** By name as well as by class: a tool module loaded from another copy of patchloop throws its own class. */
export function isConfigurationError(error: unknown): error is Error {
  return error instanceof ConfigurationError || (error instanceof Error && error.name === 'ConfigurationError');
}
