import { z } from 'zod';
import { failure, FailureType } from '../../common';

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

/**
 * A workflow's input that may carry continue-as-new state of a schema version. A version newer than
 * this build knows was written by a newer build during a rolling deploy: the workflow task fails (a
 * plain error) and is retried until a worker of that build takes it, instead of failing the run. Any
 * other unknown version fails the run at once.
 */
export function parseVersionedInput<Schema extends z.ZodType>(
  schema: Schema,
  raw: unknown,
  workflow: string,
  versions: readonly number[],
): z.output<Schema> {
  const version = (raw as { state?: { schema_version?: unknown } } | null)?.state?.schema_version;
  if (version !== undefined && !versions.includes(version as number)) {
    const message = `${workflow} state schema_version ${String(version)} is not supported by this worker (supports ${versions.join(', ')})`;
    if (typeof version === 'number' && version > Math.max(...versions))
      throw new Error(`${message}: a newer build wrote it; a worker of that build will take this run`);
    throw failure(FailureType.UnsupportedStateVersion, message);
  }
  return parseWorkflowInput(schema, raw, workflow);
}
