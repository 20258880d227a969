import { describe, expect, onTestFinished } from 'vitest';
import { it, type StartWorld } from '../support/fixtures';
import { RunFailedError } from '../../src/client/patchloop-client';
import { modelScript } from '../../src/fake-model/script';
import { ScriptedModel } from '../../src/fake-model/scripted-model';
import type { AgentDefinitionInput } from '../../src/runtime';

const manager: AgentDefinitionInput = { name: 'manager', instructions: 'You manage.', subagents: ['clerk'] };
const clerk: AgentDefinitionInput = { name: 'clerk', instructions: 'You file things.' };
const chatty: AgentDefinitionInput = { name: 'chatty', instructions: 'You chat.' };

/**
 * A worker whose model is the scripted one (what docs/testing.md shows, in process). The model closes
 * after the world (onTestFinished runs after the fixtures' cleanup).
 */
async function scriptedWorld(
  startWorld: StartWorld,
  scripts: Parameters<typeof ScriptedModel.start>[0],
  agents: AgentDefinitionInput[],
) {
  const model = await ScriptedModel.start(scripts);
  onTestFinished(() => model.close());
  const world = await startWorld({ agents, config: { openaiBaseUrl: model.url } });
  return { world, model };
}

describe('the scripted model with a real worker', () => {
  it("plays a sub-agent's conversation from its own script, chosen by the task it was given", async ({
    startWorld,
  }) => {
    const { world, model } = await scriptedWorld(
      startWorld,
      [
        // Not by its system prompt: the manager's lists the clerk as a tool, described by its instructions.
        modelScript([{ expect: { check: (request) => request.tools.length === 0 }, answer: 'Report filed.' }], {
          name: 'clerk',
          when: { user: 'File the report.' },
        }),
        modelScript(
          [
            { callTools: [{ name: 'clerk', arguments: { input: 'File the report.' } }] },
            { expect: { toolResults: [{ name: 'clerk', content: { contains: 'Report filed.' } }] }, answer: 'Filed.' },
          ],
          { name: 'manager' },
        ),
      ],
      [manager, clerk],
    );
    const result = await (await world.client.start({ agent: 'manager', input: 'Get the report filed.' })).result();
    expect(result.answer).toBe('Filed.');
    model.assertDone();
  });

  it("continues a session's conversation turn by turn, and a turn it does not expect fails with the step's message", async ({
    startWorld,
  }) => {
    const { world, model } = await scriptedWorld(
      startWorld,
      modelScript(
        [
          { expect: { user: 'hi' }, answer: 'Hello.' },
          { name: 'second turn', expect: { user: 'again' }, answer: 'Hello again.' },
        ],
        { name: 'chat' },
      ),
      [chatty],
    );
    const session = await world.client.startSession({ agent: 'chatty' });
    expect((await session.send('hi')).reply).toBe('Hello.');
    expect((await session.send('again')).reply).toBe('Hello again.');
    model.assertDone();
    // A run whose first message the script does not expect: the run fails, saying why.
    model.reset();
    const run = await world.client.start({ agent: 'chatty', input: 'bye' });
    const failed = await run.result().catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(RunFailedError);
    expect((failed as RunFailedError).causeMessage).toContain(
      'scripted model: script \'chat\' step 1, reply 1 of the conversation "bye": expected the latest user message "hi", got "bye"',
    );
    expect(() => model.assertDone()).toThrow('expected the latest user message "hi", got "bye"');
  });
});
