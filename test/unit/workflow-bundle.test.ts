import { describe, expect, it } from 'vitest';
import { workflowBundle } from '../support/temporal';

describe('workflow bundle', () => {
  it('bundles src/workflows for the sandbox without provider clients or Node built-ins', async () => {
    const { code } = await workflowBundle();
    expect(code.length).toBeGreaterThan(10_000);
    expect(code).toContain('agentRun');
    expect(code).not.toMatch(/node_modules\/openai\//);
    expect(code).not.toMatch(/require\(["']node:/);
    expect(code).not.toMatch(/src\/activities\//);
  });
});
