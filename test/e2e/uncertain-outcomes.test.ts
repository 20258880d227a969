import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { z } from 'zod';
import { toolCancelledContent, toolStepErrorContent, validateToolLinkage, type Message } from '../../src/context';
import { callTools, reply } from '../../src/fake-model/steps';
import type { RunEvent } from '../../src/runtime';
import { defineTool } from '../../src/tools/define-tool';
import { pythonMcpServer } from '../../support/mcp-servers';
import { startSideEffectServer, type SideEffect } from '../../support/side-effects';
import { eventually } from '../support/wait';

// Calls that outlive their timeout or their run's abort, and still take effect: the side effects are
// counted by a server outside the worker, and the model must be told the call may or may not have
// taken effect, unless the tool is known to be repeatable.

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function sideEffects() {
  const server = await startSideEffectServer();
  cleanups.push(() => server.close());
  return server;
}

/**
 * A registered tool that wires money: once begun it completes, whatever its signal says (it ignores
 * it), and reports its beginning and end to the side-effect server.
 */
function wire(effectsUrl: string, name: string, { idempotent = false, timeoutSeconds = 1 } = {}) {
  const post = (label: string, key: string, phase: string) =>
    fetch(`${effectsUrl}/effect`, { method: 'POST', body: JSON.stringify({ label, key, worker: 'test', phase }) });
  return defineTool({
    name,
    description: 'Wires money; once begun, it completes.',
    parameters: z.object({ label: z.string(), seconds: z.number() }),
    timeoutSeconds,
    ...(idempotent ? { idempotent: true } : {}),
    execute: async ({ label, seconds }, { idempotencyKey }) => {
      await post(label, idempotencyKey, 'start');
      await sleep(seconds * 1000);
      await post(label, idempotencyKey, 'end');
      return `wired ${label}`;
    },
  });
}

/** How many times each label's side effect began and ended, once every one of them has ended. */
async function completed(effects: SideEffect[], labels: string[]): Promise<Record<string, [number, number]>> {
  const count = (label: string, phase: string) =>
    effects.filter((effect) => effect.label === label && effect.phase === phase).length;
  await eventually(
    () => (labels.every((label) => count(label, 'end') > 0) ? true : undefined),
    30_000,
    `the side effects of ${labels.join(', ')} to land`,
  );
  return Object.fromEntries(labels.map((label) => [label, [count(label, 'start'), count(label, 'end')]]));
}

function toolResult(transcript: readonly Message[], id: string): unknown {
  return transcript.find((message) => message['role'] === 'tool' && message['tool_call_id'] === id)?.['content'];
}

function errorEvents(events: readonly RunEvent[]): Array<{ tool_call_id: string; error: string }> {
  return events.flatMap((event) =>
    event.event_type === 'tool_call_error' ? [{ tool_call_id: event.tool_call_id, error: event.error }] : [],
  );
}

const uncertain = ': it may or may not have taken effect. Check before calling it again.';

describe('registered tools that ignore their abort signal', () => {
  it('past its timeout, a call of a tool not marked idempotent is reported as possibly done; an idempotent one as timed out', async ({
    startWorld,
  }) => {
    const effects = await sideEffects();
    const world = await startWorld({
      tools: [wire(effects.url, 'wire'), wire(effects.url, 'rewire', { idempotent: true })],
      agents: [{ name: 'banker', instructions: 'Move money.', tools: ['wire', 'rewire'] }],
      fake: {
        script: [
          callTools([
            { id: 'w1', name: 'wire', arguments: '{"label": "once", "seconds": 3}' },
            { id: 'w2', name: 'rewire', arguments: '{"label": "again", "seconds": 3}' },
          ]),
          reply('done'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'banker', input: 'wire' });
    const result = await run.result();
    expect(result.status).toBe('completed');
    const possiblyDone = `Tool 'wire' timed out after 1 s and was still running when told to stop, and the tool is not marked idempotent${uncertain}`;
    expect(toolResult(result.transcript, 'w1')).toBe(toolStepErrorContent(possiblyDone));
    expect(toolResult(result.transcript, 'w2')).toBe(toolStepErrorContent("Tool 'rewire' timed out after 1 s"));
    expect(errorEvents((await run.status()).events)).toEqual(
      expect.arrayContaining([
        { tool_call_id: 'w1', error: possiblyDone },
        { tool_call_id: 'w2', error: "Tool 'rewire' timed out after 1 s" },
      ]),
    );
    // Both took effect after all, once each.
    expect(await completed(effects.effects, ['once', 'again'])).toEqual({ once: [1, 1], again: [1, 1] });
  });

  it("outliving its run's abort, a call of a tool not marked idempotent is cancelled with a marker that says it may still take effect", async ({
    startWorld,
  }) => {
    const effects = await sideEffects();
    const world = await startWorld({
      tools: [
        wire(effects.url, 'wire', { timeoutSeconds: 30 }),
        wire(effects.url, 'rewire', { idempotent: true, timeoutSeconds: 30 }),
      ],
      agents: [{ name: 'banker', instructions: 'Move money.', tools: ['wire', 'rewire'] }],
      fake: {
        script: [
          callTools([
            { id: 'w1', name: 'wire', arguments: '{"label": "once", "seconds": 4}' },
            { id: 'w2', name: 'rewire', arguments: '{"label": "again", "seconds": 4}' },
          ]),
        ],
      },
    });
    const run = await world.client.start({ agent: 'banker', input: 'wire' });
    await eventually(() => (effects.effects.length === 2 ? true : undefined), 30_000, 'both wires begun');
    await run.abort('user_interrupt');
    const result = await run.result();
    expect(result.status).toBe('aborted');
    const note = `Tool 'wire' was still running when the run was aborted (it did not stop when told to), and the tool is not marked idempotent${uncertain}`;
    expect(toolResult(result.transcript, 'w1')).toBe(toolCancelledContent('wire', `user_interrupt. ${note}`));
    expect(toolResult(result.transcript, 'w2')).toBe(toolCancelledContent('rewire', 'user_interrupt'));
    expect(() => validateToolLinkage(result.transcript)).not.toThrow();
    const events = (await run.status()).events;
    expect(errorEvents(events)).toEqual([{ tool_call_id: 'w1', error: note }]);
    expect(events.find((event) => event.event_type === 'tool_calls_batch_end')).toMatchObject({
      cancelled: ['w1', 'w2'],
    });
    expect(await completed(effects.effects, ['once', 'again'])).toEqual({ once: [1, 1], again: [1, 1] });
  });
});

describe('MCP tools whose calls the server completes all the same', () => {
  const server = (effectsUrl: string, timeoutSeconds: number) =>
    pythonMcpServer({
      tools: ['transfer', 'quote'],
      env: { PY_MCP_EFFECTS_URL: effectsUrl },
      timeout_seconds: timeoutSeconds,
    });

  it('past its timeout, a non-idempotent call is reported as possibly done (it lands later); a read-only one as timed out', async ({
    startWorld,
  }) => {
    const effects = await sideEffects();
    const world = await startWorld({
      agents: [{ name: 'treasurer', instructions: 'Move money.', mcp_servers: [server(effects.url, 1)] }],
      fake: {
        script: [
          callTools([
            { id: 't1', name: 'transfer', arguments: '{"label": "rent", "seconds": 3}' },
            { id: 'q1', name: 'quote', arguments: '{"label": "price", "seconds": 3}' },
          ]),
          reply('done'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'treasurer', input: 'pay the rent' });
    const result = await run.result();
    expect(result.status).toBe('completed');
    const possiblyDone =
      "Tool 'transfer' (MCP server 'python') timed out: no answer and no progress for 1 s. The server was told to " +
      `cancel it, but the server does not mark the tool readOnlyHint or idempotentHint${uncertain}`;
    expect(toolResult(result.transcript, 't1')).toBe(toolStepErrorContent(possiblyDone));
    expect(toolResult(result.transcript, 'q1')).toBe(
      toolStepErrorContent("Tool 'quote' (MCP server 'python') timed out: no answer and no progress for 1 s"),
    );
    expect(errorEvents((await run.status()).events)).toContainEqual({ tool_call_id: 't1', error: possiblyDone });
    // The transfer the model was told about landed after all, once.
    expect(await completed(effects.effects, ['rent'])).toEqual({ rent: [1, 1] });
  });

  it("outliving its run's abort, a non-idempotent call is cancelled with a marker that says it may still take effect (it lands later)", async ({
    startWorld,
  }) => {
    const effects = await sideEffects();
    const world = await startWorld({
      agents: [{ name: 'treasurer', instructions: 'Move money.', mcp_servers: [server(effects.url, 30)] }],
      fake: {
        script: [
          callTools([
            { id: 't1', name: 'transfer', arguments: '{"label": "rent", "seconds": 5}' },
            { id: 'q1', name: 'quote', arguments: '{"label": "price", "seconds": 5}' },
          ]),
        ],
      },
    });
    const run = await world.client.start({ agent: 'treasurer', input: 'pay the rent' });
    await eventually(() => (effects.effects.length === 2 ? true : undefined), 30_000, 'both calls begun');
    await run.abort('user_interrupt');
    const result = await run.result();
    expect(result.status).toBe('aborted');
    const note =
      "Tool 'transfer' (MCP server 'python') was still running when the run was aborted (the server was told to " +
      `cancel it), and the server does not mark the tool readOnlyHint or idempotentHint${uncertain}`;
    expect(toolResult(result.transcript, 't1')).toBe(toolCancelledContent('transfer', `user_interrupt. ${note}`));
    expect(toolResult(result.transcript, 'q1')).toBe(toolCancelledContent('quote', 'user_interrupt'));
    expect(() => validateToolLinkage(result.transcript)).not.toThrow();
    expect(errorEvents((await run.status()).events)).toEqual([{ tool_call_id: 't1', error: note }]);
    expect(await completed(effects.effects, ['rent'])).toEqual({ rent: [1, 1] });
  });
});
