import { ApplicationFailure } from '@temporalio/workflow';
import { z } from 'zod';

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
    throw ApplicationFailure.nonRetryable(
      `invalid ${workflow} input: ${z.prettifyError(parsed.error)}`,
      'InvalidRunInput',
    );
  }
  return parsed.data;
}
