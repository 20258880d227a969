import { z } from 'zod';
import { ContextError, type ContextErrorKind } from '../context';

/** The error shape the CLI prints with --json: `{"error": {"type", "message"}}`; never a stack trace. */
export interface ErrorReport {
  error: { type: string; message: string };
}

const CONTEXT_ERROR_TYPES: Record<ContextErrorKind, string> = {
  linkage: 'LinkageError',
  experience: 'ExperienceError',
  summary: 'SummaryError',
  invalid_input: 'InvalidInput',
};

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** A failure the CLI explains itself (a connection, a missing worker, an unknown agent): no stack trace. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly type: string,
  ) {
    super(message);
    this.name = type;
  }
}

/** 2 for usage errors, 1 for everything else that failed. */
export function exitCodeOf(error: unknown): number {
  return error instanceof UsageError || (error instanceof CliError && error.type === 'UsageError') ? 2 : 1;
}

export function toErrorReport(error: unknown): ErrorReport {
  if (error instanceof ContextError)
    return { error: { type: CONTEXT_ERROR_TYPES[error.kind], message: error.message } };
  if (error instanceof z.ZodError) return { error: { type: 'InvalidInput', message: z.prettifyError(error) } };
  if (error instanceof SyntaxError) return { error: { type: 'InvalidJson', message: error.message } };
  if (error instanceof UsageError) return { error: { type: 'UsageError', message: error.message } };
  if (error instanceof CliError) return { error: { type: error.type, message: error.message } };
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('E')) return { error: { type: 'ReadError', message } };
  return { error: { type: error instanceof Error ? error.name : 'Error', message } };
}
