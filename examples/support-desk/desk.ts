import { defineGuardrail, defineTool } from 'patchloop';
import { z } from 'zod';

const CARD = /\b\d(?:[ -]?\d){12,18}\b/g;
const EMAIL = /[\w.+-]+@[\w-]+(?:\.[\w-]+)+/g;

/** Card numbers and email addresses never reach the model, the transcript or a reader. */
export const redactPii = defineGuardrail({
  name: 'redact_pii',
  stages: ['input', 'tool_result', 'output'],
  check: ({ text }) => {
    const redacted = text.replace(CARD, '[card]').replace(EMAIL, '[email]');
    return redacted === text
      ? { decision: 'allow' }
      : { decision: 'rewrite', text: redacted, reason: 'personal data redacted' };
  },
});

/** An answer that holds a live API key is blocked: no reader sees a byte of it. */
export const noSecrets = defineGuardrail({
  name: 'no_secrets',
  stages: ['output'],
  check: ({ text }) =>
    /sk-live-\w+/.test(text) ? { decision: 'block', reason: 'the answer holds an API key' } : { decision: 'allow' },
});

/** Refunds above the limit never run: the model reads why. */
export const refundLimit = defineGuardrail({
  name: 'refund_limit',
  stages: ['tool'],
  options: z.object({ max_cents: z.number().int().positive() }),
  check: ({ text }, { max_cents }) => {
    const { cents } = JSON.parse(text) as { cents?: unknown };
    if (typeof cents !== 'number') return { decision: 'block', reason: 'a refund names its amount in cents' };
    return cents > max_cents
      ? { decision: 'block', reason: `refunds above ${max_cents} cents go through the billing team` }
      : { decision: 'allow' };
  },
});

const ORDERS: Record<string, object> = {
  A1: { order: 'A1', item: 'kettle', cents: 4900, card: '4111 1111 1111 1111', email: 'ada@example.com' },
};

export const lookupOrder = defineTool({
  name: 'lookup_order',
  description: 'An order by its id: the item, the amount and how it was paid.',
  parameters: z.object({ order: z.string() }),
  execute: ({ order }) => ORDERS[order] ?? `no order ${order}`,
});

export const refund = defineTool({
  name: 'refund',
  description: 'Refunds an amount (in cents) of an order.',
  parameters: z.object({ order: z.string(), cents: z.number().int() }),
  execute: ({ order, cents }) => {
    // A real tool would call the payment service; this one says what it would do.
    console.log(`refund executed: ${order} ${cents}`);
    return `refunded ${cents} cents of ${order}`;
  },
});

/** What `patchloop worker --tools desk.ts` serves. */
export const tools = [lookupOrder, refund];
export const guardrails = [redactPii, noSecrets, refundLimit];
