/**
 * Every failure of the context core. `kind` says which rule failed; `message` is the spec's exact text
 * (spec 3.5, 3.6, 5.3) so callers and the conformance vectors can match it.
 */
export type ContextErrorKind = 'linkage' | 'experience' | 'summary' | 'invalid_input';

/**
 * The type a context error is reported with, by kind (the CLI's `{"error": {"type", "message"}}` of
 * `compile`). A type is a contract: never rename one. `InvalidInput` is the CLI's own type for input
 * that fails its schema too.
 */
export const ContextErrorType = {
  linkage: 'LinkageError',
  experience: 'ExperienceError',
  summary: 'SummaryError',
  invalid_input: 'InvalidInput',
} as const satisfies Record<ContextErrorKind, string>;
export type ContextErrorType = (typeof ContextErrorType)[ContextErrorKind];

export class ContextError extends Error {
  override readonly name = 'ContextError';
  constructor(
    readonly kind: ContextErrorKind,
    message: string,
  ) {
    super(message);
  }
}
