import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, FAST_TOOL_MAX_TIMEOUT_SECONDS, FAST_TOOL_TIMEOUT_SECONDS } from '../../src/tools/define-tool';

describe('fast tools (defineTool({ fast }))', () => {
  const base = { name: 'quick', description: 'd', parameters: z.object({}), execute: () => 1 };

  it('are marked in their descriptor, with a short default timeout', () => {
    expect(defineTool({ ...base, fast: true }).descriptor).toMatchObject({
      fast: true,
      timeout_seconds: FAST_TOOL_TIMEOUT_SECONDS,
    });
    expect(defineTool(base).descriptor).not.toHaveProperty('fast');
    expect(defineTool(base).descriptor).not.toHaveProperty('timeout_seconds');
  });

  it('refuse a worst case, retries included, over the cap, and a task queue', () => {
    expect(() => defineTool({ ...base, fast: true, timeoutSeconds: FAST_TOOL_MAX_TIMEOUT_SECONDS })).not.toThrow();
    expect(() => defineTool({ ...base, fast: true, timeoutSeconds: FAST_TOOL_MAX_TIMEOUT_SECONDS + 1 })).toThrow(
      /at most 8 s, every retry included .* not 9 s/,
    );
    expect(() =>
      defineTool({ ...base, fast: true, timeoutSeconds: 3, retry: { maxAttempts: 3, initialInterval: 100 } }),
    ).toThrow(/not 9.3 s/);
    expect(() => defineTool({ ...base, fast: true, taskQueue: 'elsewhere' })).toThrow(/cannot name a taskQueue/);
  });
});
