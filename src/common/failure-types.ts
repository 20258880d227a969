/**
 * Failure types shared by activities (which throw them) and workflows (which decide on them). Pure
 * data, so workflow code may import it.
 */

/** LLM failures that end a call at once: retrying cannot help. */
export const NON_RETRYABLE_PROVIDER_ERRORS = [
  'ProviderRejected',
  'ProviderAuthFailed',
  'ProviderQuotaExceeded',
  'ContextTooLong',
  'InvalidLlmRequest',
];
