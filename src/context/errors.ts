/**
 * Every failure of the context core. `kind` says which rule failed; `message` is the spec's exact text
 * (spec 3.5, 3.6, 5.3) so callers and the conformance vectors can match it.
 */
export type ContextErrorKind = 'linkage' | 'experience' | 'summary' | 'invalid_input';

export class ContextError extends Error {
  override readonly name = 'ContextError';
  constructor(
    readonly kind: ContextErrorKind,
    message: string,
  ) {
    super(message);
  }
}
