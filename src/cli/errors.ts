import { z } from 'zod';
import { ContextError, type ContextErrorKind } from '../context';

/** The one error shape the CLI prints: `{"error": {"type", "message"}}`, never a stack trace. */
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

export function toErrorReport(error: unknown): ErrorReport {
  if (error instanceof ContextError)
    return { error: { type: CONTEXT_ERROR_TYPES[error.kind], message: error.message } };
  if (error instanceof z.ZodError) return { error: { type: 'InvalidInput', message: z.prettifyError(error) } };
  if (error instanceof SyntaxError) return { error: { type: 'InvalidJson', message: error.message } };
  if (error instanceof UsageError) return { error: { type: 'UsageError', message: error.message } };
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('E')) return { error: { type: 'ReadError', message } };
  return { error: { type: error instanceof Error ? error.name : 'Error', message } };
}
