import { z } from 'zod';
import { failure, FailureType } from '../common';

/**
 * A workflow's input, checked with its schema. Invalid input fails the run at once (non-retryable, a
 * readable message): a plain error would fail the workflow task again and again instead.
 */
export function parseWorkflowInput<Schema extends z.ZodType>(
  schema: Schema,
  raw: unknown,
  workflow: string,
): z.output<Schema> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    throw failure(FailureType.InvalidRunInput, `invalid ${workflow} input: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}
