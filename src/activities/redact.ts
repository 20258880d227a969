import { ApplicationFailure, CancelledFailure, TemporalFailure } from '@temporalio/common';

export const REDACTED = '[REDACTED]';

/**
 * Shapes of provider credentials, redacted from errors and logs even when they are not the configured
 * key: providers echo keys in 401 bodies, and tools may hold keys of their own.
 */
const KEY_SHAPES: RegExp[] = [
  /\bsk-[A-Za-z0-9_-]{16,}/g, // OpenAI (sk-, sk-proj-), Anthropic (sk-ant-), OpenRouter (sk-or-)
  /\b(?:xai|gsk|hf|pplx|csk|nvapi)[-_][A-Za-z0-9_-]{20,}/g, // xAI, Groq, Hugging Face, Perplexity, Cerebras, NVIDIA
  /\bAIza[0-9A-Za-z_-]{30,}/g, // Google
  /\b(?:Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{16,}/gi, // credentials in echoed headers
];

/**
 * Removes secrets from text before it leaves an activity: the configured API keys wherever they occur,
 * and anything shaped like a provider key.
 */
export class SecretRedactor {
  private readonly secrets: string[];

  constructor(secrets: ReadonlyArray<string | undefined>) {
    // Short values would redact ordinary words; real keys are long.
    this.secrets = [
      ...new Set(secrets.filter((secret): secret is string => typeof secret === 'string' && secret.length >= 8)),
    ].sort((a, b) => b.length - a.length);
  }

  /** The configured secrets only: applied to everything an activity returns. */
  redactSecrets(text: string): string {
    let result = text;
    for (const secret of this.secrets) if (result.includes(secret)) result = result.split(secret).join(REDACTED);
    return result;
  }

  /** Configured secrets and key-shaped values: applied to errors, failures, events and log lines. */
  redact(text: string): string {
    let result = this.redactSecrets(text);
    for (const shape of KEY_SHAPES) result = result.replace(shape, REDACTED);
    return result;
  }

  /** True when a configured secret occurs anywhere in the value's JSON. */
  containsSecret(value: unknown): boolean {
    if (this.secrets.length === 0) return false;
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    return text !== undefined && this.secrets.some((secret) => text.includes(secret));
  }

  /** Every string in a JSON-like value, redacted with `redactText`. */
  redactValue<T>(
    value: T,
    redactText: (text: string) => string = (text) => this.redactSecrets(text),
    seen: WeakSet<object> = new WeakSet(),
  ): T {
    if (typeof value === 'string') return redactText(value) as T;
    if (value === null || typeof value !== 'object') return value;
    // Log metadata may be any object graph (a plugin, a span context): cycles end here.
    if (seen.has(value)) return '[circular]' as T;
    seen.add(value);
    if (Array.isArray(value)) return value.map((item) => this.redactValue(item, redactText, seen)) as T;
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, this.redactValue(item, redactText, seen)]),
    ) as T;
  }

  /**
   * The same failure with its message, stack, details and causes redacted. Type, retryability, retry
   * delay and category are kept, so classification is unchanged. Cancellations pass through untouched:
   * the worker must still recognise them.
   */
  redactError(error: unknown): unknown {
    if (error instanceof CancelledFailure) return error;
    if (error instanceof ApplicationFailure) {
      const redacted = ApplicationFailure.create({
        message: this.redact(error.message),
        type: error.type ?? undefined,
        nonRetryable: error.nonRetryable ?? undefined,
        details: error.details ? this.redactValue(error.details, (text) => this.redact(text)) : undefined,
        nextRetryDelay: error.nextRetryDelay,
        category: error.category ?? undefined,
        cause: error.cause ? (this.redactError(error.cause) as Error) : undefined,
      });
      redacted.stack = error.stack ? this.redact(error.stack) : undefined;
      return redacted;
    }
    if (error instanceof TemporalFailure) return error;
    if (error instanceof Error) {
      // Anything else becomes a retryable failure typed by its constructor, as the worker would make it.
      const redacted = ApplicationFailure.create({
        message: this.redact(error.message),
        type: error.constructor?.name ?? error.name,
      });
      redacted.stack = error.stack ? this.redact(error.stack) : undefined;
      return redacted;
    }
    return ApplicationFailure.create({ message: this.redact(String(error)), type: 'Error' });
  }
}
