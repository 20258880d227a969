import { describe, expect } from 'vitest';
import { z } from 'zod';
import { it, type StartWorld } from '../support/fixtures';
import type { AgentDefinitionInput } from '../../src/runtime';
import { validateToolLinkage } from '../../src/context';
import { callTools, reply, type FakeStep } from '../../src/fake-model/steps';
import { runCli } from '../support/cli';
import { eventually } from '../support/wait';
import { defineTool } from '../../src/tools/define-tool';
import { ForkRefusedError, RunFailedError, SessionHandle } from '../../src/client/patchloop-client';
import { testConsole } from '../support/console';

/** A side-effecting tool that counts its executions. */
function noteTool(executions: string[]) {
  return defineTool({
    name: 'note',
    description: 'Writes a note.',
    parameters: z.object({ text: z.string() }),
    execute: ({ text }) => {
      executions.push(text);
      return `noted ${text}`;
    },
  });
}

const clerk: AgentDefinitionInput = { name: 'clerk', instructions: 'Keep notes.', tools: ['note'] };

async function clerkWorld(startWorld: StartWorld, script: FakeStep[]) {
  const executions: string[] = [];
  const world = await startWorld({ tools: [noteTool(executions)], agents: [clerk], fake: { script } });
  return { world, executions };
}

const note = (id: string, text: string) => callTools([{ id, name: 'note', arguments: JSON.stringify({ text }) }]);

/** Request bodies as the fake model received them, as JSON text (byte for byte). */
const bodies = (world: { fake: { requests: Array<{ body: unknown }> } }) =>
  world.fake.requests.map((request) => JSON.stringify(request.body));

describe('fork a session', () => {
  it("at turn N: the fork answers that turn's message again with the original's exact request, then takes new ones", async ({
    startWorld,
  }) => {
    const { world, executions } = await clerkWorld(startWorld, [
      note('n1', 'milk'),
      reply('noted milk'),
      reply('two noted'),
      note('n3', 'eggs'),
      reply('noted eggs'),
      // The fork's turn 2, then its own turn 3.
      reply('two, forked'),
      reply('three, forked'),
      // The fork with another message at turn 2.
      reply('another two'),
    ]);
    const original = await world.client.startSession({ agent: 'clerk' }, { sessionId: 'session-fork-original' });
    expect((await original.send('note milk')).reply).toBe('noted milk');
    expect((await original.send('how many?')).reply).toBe('two noted');
    expect((await original.send('note eggs')).reply).toBe('noted eggs');
    const sent = bodies(world);
    expect(sent).toHaveLength(5);
    const originalTranscript = await original.transcript();

    const fork = await world.client.fork('session-fork-original', { at: 2, workflowId: 'session-fork-2' });
    expect(fork).toBeInstanceOf(SessionHandle);
    const session = fork as SessionHandle;
    // Turn 2's message is answered again: its request is the original's turn 2 request, byte for byte.
    await eventually(() => (world.fake.requests.length === 6 ? true : undefined));
    expect(bodies(world)[5]).toBe(sent[2]);
    // Turns go on from there: the fork's next turn is its turn 3, on the forked context.
    const third = await session.send('and now?');
    expect(third).toEqual({ status: 'completed', reply: 'three, forked', turn: 3 });
    const transcript = await session.transcript();
    // The original's context up to turn 2's message, then the fork's own answers.
    expect(transcript.slice(0, 6)).toEqual(originalTranscript.slice(0, 6));
    expect(transcript[5]).toEqual({ role: 'user', content: 'how many?' });
    expect(transcript.slice(6)).toEqual([
      { role: 'assistant', content: 'two, forked' },
      { role: 'user', content: 'and now?' },
      { role: 'assistant', content: 'three, forked' },
    ]);
    validateToolLinkage(transcript);
    expect(executions).toEqual(['milk', 'eggs']);
    const status = await session.status();
    expect(status.llm_calls).toBe(2);
    expect(status.events.find((event) => event.event_type === 'custom_event')).toMatchObject({
      event_name: 'forked',
      data: { workflow_id: 'session-fork-original', at: 2, unit: 'turn', overrides: [] },
    });
    await session.close();
    expect((await session.sessionResult()).turns).toBe(3);

    // Another message at turn 2: the same request with that message instead.
    const other = (await world.client.fork('session-fork-original', {
      at: 2,
      message: 'how many notes, exactly?',
    })) as SessionHandle;
    await eventually(() => (world.fake.requests.length === 8 ? true : undefined));
    const originalBody = JSON.parse(sent[2]!) as { messages: unknown[] };
    expect(world.fake.requests[7]!.body).toEqual({
      ...originalBody,
      messages: [...originalBody.messages.slice(0, -1), { role: 'user', content: 'how many notes, exactly?' }],
    });
    await other.close();
    expect((await other.sessionResult()).transcript.at(-1)).toEqual({ role: 'assistant', content: 'another two' });
    expect(executions).toEqual(['milk', 'eggs']);
    world.fake.assertDone();
  });

  it('across continue-as-new, and a turn it never had fails the fork clearly; turn 0 and recordings are refused', async ({
    startWorld,
  }) => {
    const { world, executions } = await clerkWorld(startWorld, [
      ...Array.from({ length: 5 }, (_, index) => [note(`n${index}`, `item ${index}`), reply(`noted ${index}`)]).flat(),
      reply('item 3 again'),
    ]);
    const original = await world.client.startSession(
      { agent: 'clerk', continue_as_new: { max_history_events: 10 } },
      { sessionId: 'session-fork-chain' },
    );
    for (let index = 0; index < 5; index += 1)
      expect((await original.send(`note item ${index}`)).reply).toBe(`noted ${index}`);
    const runs = [];
    for await (const run of world.client.temporal.workflow.list({ query: `WorkflowId = 'session-fork-chain'` }))
      runs.push(run);
    expect(runs.length).toBeGreaterThanOrEqual(3);
    const sent = bodies(world);
    const fork = (await world.client.fork('session-fork-chain', { at: 4 })) as SessionHandle;
    await fork.close();
    expect((await fork.sessionResult()).transcript.at(-1)).toEqual({ role: 'assistant', content: 'item 3 again' });
    // Turn 4's first request was the 7th the model received.
    expect(bodies(world)[10]).toBe(sent[6]);
    expect(executions).toHaveLength(5);

    const never = await world.client.fork('session-fork-chain', { at: 9 });
    const error = await never.result().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RunFailedError);
    expect((error as RunFailedError).type).toBe('ForkUnavailable');
    expect((error as RunFailedError).message).toContain('had no turn 9');
    await expect(world.client.fork('session-fork-chain', { at: 0 })).rejects.toThrow(ForkRefusedError);
    await expect(
      world.client.fork('session-fork-chain', { at: 1, toolRecordings: { from_run: 'session-fork-chain', calls: [] } }),
    ).rejects.toThrow(/live tools only/);
    world.fake.assertDone();
  });

  it('the CLI forks and rewinds a session; show, and the console\'s "fork from here" on each turn', async ({
    startWorld,
  }) => {
    const { world } = await clerkWorld(startWorld, [
      reply('one'),
      reply('two'),
      reply('two by the CLI'),
      reply('two from the console'),
      reply('two rewound'),
    ]);
    const original = await world.client.startSession({ agent: 'clerk' }, { sessionId: 'session-fork-cli' });
    await original.send('first');
    await original.send('second');
    const env = { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue };
    const forked = await runCli(
      ['fork', 'session-fork-cli', '--at', '2', '--id', 'session-fork-by-cli', '--json'],
      env,
    );
    expect(forked.stderr).toBe('');
    expect(JSON.parse(forked.stdout)).toEqual({
      workflow_id: 'session-fork-by-cli',
      forked_from: { workflow_id: 'session-fork-cli', at: 2 },
    });
    await eventually(() => (world.fake.requests.length === 3 ? true : undefined));
    expect(bodies(world)[2]).toBe(bodies(world)[1]);
    const shown = await runCli(['show', 'session-fork-by-cli'], env);
    expect(shown.stdout).toContain('at turn 2');
    await eventually(async () => {
      const listed = await runCli(['show', 'session-fork-cli'], env);
      return listed.stdout.includes('fork at turn 2:') ? true : undefined;
    });

    const token = 'session-fork-console-token-0123456789';
    const console = await testConsole(world.client, token);
    try {
      const { timeline } = (await (await fetch(`${console.url}/runs/session-fork-cli/details`)).json()) as {
        timeline: string;
      };
      // A session forks at its turns, not at its model calls' iterations.
      expect(timeline.match(/data-fork-at="\d+"/g)).toEqual(['data-fork-at="1"', 'data-fork-at="2"']);
      expect(timeline).toContain('a new session from the context as this turn began');
      const started = await fetch(`${console.url}/api/runs/session-fork-cli/fork`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ at: 2 }),
      });
      expect(started.status).toBe(200);
      const { workflow_id: forkId } = (await started.json()) as { workflow_id: string };
      await eventually(() => (world.fake.requests.length === 4 ? true : undefined));
      expect(bodies(world)[3]).toBe(bodies(world)[1]);
      const page = await (await fetch(`${console.url}/runs/${forkId}`)).text();
      expect(page).toContain('Forked from <a href="/runs/session-fork-cli">session-fork-cli</a> at turn 2');
    } finally {
      await console.close();
    }

    // Rewind: the fork goes on from turn 2, the original is closed with the reason on record.
    const rewound = await runCli(['rewind', 'session-fork-cli', '--at', '2', '--json'], env);
    expect(rewound.stderr).toBe('');
    expect(JSON.parse(rewound.stdout)).toMatchObject({ original_aborted: true });
    const result = await original.sessionResult();
    expect(result.turns).toBe(2);
    await eventually(() => (world.fake.requests.length === 5 ? true : undefined));
    expect(bodies(world)[4]).toBe(bodies(world)[1]);
    world.fake.assertDone();
  });
});
