import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assistantAgent, carefulAssistantAgent } from '../../src/agents/assistant';
import { demoModel } from '../../src/fake-model/demo-model';
import { listedWorkflows, startWorld, type TestWorld } from '../support/temporal';
import { runCli } from '../support/cli';
import { eventually, recordHistory } from '../support/wait';

/**
 * The CLI says what is happening (issue 35, parts 4 and 5): waits without a worker, Ctrl-C, commands on
 * ended runs, closed pipes, failed runs in the list, the worker's terminal, and what the Temporal UI
 * shows. One in-process worker on the demo model serves the file; cases that need a worker process (or
 * a server of their own) start it.
 */
let world: TestWorld;
beforeAll(async () => {
  world = await startWorld({ fake: { responder: demoModel }, agents: [assistantAgent, carefulAssistantAgent] });
});
afterAll(async () => {
  await world?.close();
});

function cli(args: string[], stdin = '', env: Record<string, string> = {}) {
  return runCli(
    args,
    { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue, ...env },
    stdin,
  );
}

describe('failed runs in the list', () => {
  it('a run that fails before its agent resolves (an unknown agent) carries its status and agent', async () => {
    const agent = `ghost-${Date.now()}`;
    const run = await cli(['run', agent, 'hello', '--id', `manners-unknown-${agent}`]);
    expect(run.stderr).toBe(`error: unknown agent '${agent}'; this worker serves: assistant, careful-assistant\n`);
    await recordHistory(world.client.run(`manners-unknown-${agent}`), 'unknown-agent-failed-visible');
    const listed = await eventually(async () => {
      const out = await cli(['list', '--status', 'failed', '--agent', agent, '--json']);
      const rows = JSON.parse(out.stdout) as Array<{ workflow_id: string; agent: string; status: string }>;
      return rows.length > 0 ? rows : undefined;
    });
    expect(listed).toEqual([
      expect.objectContaining({ workflow_id: `manners-unknown-${agent}`, agent, status: 'failed' }),
    ]);
    // As an operator (or the UI's filter) asks for them: by patchloop's own attributes.
    const queried = await listedWorkflows(`PatchloopAgent = '${agent}' AND PatchloopStatus = 'failed'`);
    expect(queried.map((entry) => entry.execution.workflowId)).toEqual([`manners-unknown-${agent}`]);
  });
});
