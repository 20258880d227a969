import { z } from 'zod';
import { CliErrorType } from '../common/cli-error-types';
import type { FailureType } from '../common/failure-types';
import { ContextError, ContextErrorType } from '../context';

/** The error shape the CLI prints with --json: `{"error": {"type", "message"}}`; never a stack trace. */
export interface ErrorReport {
  error: { type: string; message: string };
}

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * A failure the CLI explains itself (a connection, a missing worker, an unknown agent): no stack trace.
 * Its type is the CLI's own, or the failure type of the run it reports.
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly type: CliErrorType | FailureType,
  ) {
    super(message);
    this.name = type;
  }
}

/**
 * Every exit status the CLI uses, in one place (the help and docs/cli.md list them): a closed pipe
 * ends a command as it ends other Unix tools, 128 + SIGPIPE; Ctrl-C as 128 + SIGINT.
 */
export const EXIT = {
  done: 0,
  failed: 1,
  usage: 2,
  /** `run` started the run, but no worker has taken it: it waits in its task queue. */
  waitingForWorker: 3,
  /** The run had already ended (`abort`, `send`): nothing was done. */
  ended: 4,
  interrupted: 130,
  closedPipe: 141,
} as const;

/** A command's output with an exit status other than 0 (a run started that no worker has taken yet). */
export class WithStatus {
  constructor(
    readonly output: unknown,
    readonly status: number,
  ) {}
}

/** 2 for usage errors, 4 for a run that had already ended, 1 for everything else that failed. */
export function exitCodeOf(error: unknown): number {
  if (error instanceof UsageError || (error instanceof CliError && error.type === CliErrorType.UsageError))
    return EXIT.usage;
  return error instanceof CliError && error.type === CliErrorType.RunEnded ? EXIT.ended : EXIT.failed;
}

export function toErrorReport(error: unknown): ErrorReport {
  if (error instanceof ContextError) return { error: { type: ContextErrorType[error.kind], message: error.message } };
  if (error instanceof z.ZodError)
    return { error: { type: CliErrorType.InvalidInput, message: z.prettifyError(error) } };
  if (error instanceof SyntaxError) return { error: { type: CliErrorType.InvalidJson, message: error.message } };
  if (error instanceof UsageError) return { error: { type: CliErrorType.UsageError, message: error.message } };
  if (error instanceof CliError) return { error: { type: error.type, message: error.message } };
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('E')) return { error: { type: CliErrorType.ReadError, message } };
  return { error: { type: error instanceof Error ? error.name : 'Error', message } };
}

/** Temporal cannot be reached: which address, and what to do about it. */
export function temporalUnreachable(address: string, error: unknown): CliError {
  return new CliError(
    `cannot reach Temporal at ${address} (${(error as Error).message}). Start a dev server with 'npx patchloop server', or set TEMPORAL_ADDRESS.`,
    CliErrorType.ConnectionError,
  );
}
