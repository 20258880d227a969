import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { FakeModelServer } from '../../src/fake-model/server';
import { callTools, reply } from '../../src/fake-model/steps';
import type { AgentDefinitionInput } from '../../src/runtime';
import {
  everythingLauncher,
  everythingStdio,
  filesystemServerBin,
  pythonMcpScript,
  pythonMcpServer,
  pythonWithMcp,
  listServerTools,
  offeredTools,
  startEverythingHttp,
  toolMessages,
} from '../../support/mcp-servers';
import { eventually, recordHistory } from '../support/wait';
import { historyText } from '../support/history-text';
import { freePort } from '../../src/worker/free-port';
import { workerProcesses } from '../support/worker-processes';

// Real servers nobody on the project wrote: server-everything, server-filesystem and one written with
// Python's `mcp` package (FastMCP).

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A folder for the test's files; the Python servers that journaled into it are killed at the end. */
function scratch() {
  const folder = mkdtempSync(join(tmpdir(), 'patchloop-mcp-durable-'));
  const journal = join(folder, 'journal.txt');
  cleanups.push(() => {
    for (const pid of new Set(journalEntries(journal).map((entry) => entry.pid)))
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
  });
  return { folder, journal };
}

/** What the Python server journaled: "<tool> started|cancelled", by process. */
function journalEntries(journal: string): Array<{ line: string; pid: number }> {
  if (!existsSync(journal)) return [];
  return readFileSync(journal, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((text) => {
      const [, line, pid] = /^(.*) pid=(\d+)$/.exec(text)!;
      return { line: line!, pid: Number(pid) };
    });
}

function journaled(journal: string): string[] {
  return journalEntries(journal).map((entry) => entry.line);
}

describe('MCP calls under failure', () => {
  it('kill -9 of the worker mid-batch: the recorded tool list after restart; the read-only call runs again, the non-idempotent one does not and the model is told it may or may not have taken effect', async () => {
    const { folder, journal } = scratch();
    const ledger = join(folder, 'ledger.txt');
    const release = join(folder, 'release');
    const listingFile = join(folder, 'listing.txt');
    writeFileSync(listingFile, 'v1');
    const serverEnv = { PY_MCP_JOURNAL: journal, PY_MCP_LISTING_FILE: listingFile };
    const fake = await FakeModelServer.start({
      script: [
        callTools([
          { id: 'a1', name: 'append_line', arguments: JSON.stringify({ path: ledger, line: 'paid', release }) },
          { id: 'c1', name: 'count_lines', arguments: JSON.stringify({ path: ledger, release }) },
        ]),
        reply('done'),
      ],
    });
    const agents = [
      {
        name: 'ledger',
        instructions: 'Keep the ledger.',
        mcp_servers: [pythonMcpServer({ tools: ['append_line', 'count_lines'], env: serverEnv })],
        limits: { heartbeat_timeout_seconds: 3 },
      } as AgentDefinitionInput,
    ];
    const { client, start } = await workerProcesses(fake, agents, 'mcp-crash', cleanups);
    const first = await start();
    const run = await client.start({ agent: 'ledger', input: 'pay once, then count' });
    // Both calls are on the server: the payment is written, neither call has answered.
    await eventually(
      () => {
        const lines = journaled(journal);
        return lines.includes('append_line started') && lines.includes('count_lines started') ? true : undefined;
      },
      30_000,
      'both calls running on the server',
    );
    expect(readFileSync(ledger, 'utf8')).toBe('paid\n');
    await first.kill('SIGKILL');
    // The server now lists its tools differently; the calls it gets answer at once.
    writeFileSync(listingFile, 'v2');
    writeFileSync(release, '');
    await start();

    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.answer).toBe('done');
    await recordHistory(run, 'mcp-interrupted-call');
    // The payment happened once: the call was not sent again. The read-only count ran twice.
    expect(readFileSync(ledger, 'utf8')).toBe('paid\n');
    expect(journaled(journal).filter((line) => line === 'append_line started')).toHaveLength(1);
    // At least twice (a slow machine may time an attempt out once more: a read-only call may repeat).
    expect(journaled(journal).filter((line) => line === 'count_lines started').length).toBeGreaterThanOrEqual(2);
    // The model call before the crash was not repeated; the one after it saw both results.
    expect(fake.requests).toHaveLength(2);
    const [before, after] = fake.requests.map((request) => request.body);
    const interrupted =
      "Tool 'append_line' (MCP server 'python') was interrupted: an earlier attempt of its batch did not report a " +
      'result for it (its worker stopped or lost contact), and the server does not mark the tool readOnlyHint or ' +
      'idempotentHint, so it was not sent again: it may or may not have taken effect. Check before calling it again.';
    const results = toolMessages(after!);
    expect(results.map((message) => message.tool_call_id)).toEqual(['a1', 'c1']);
    expect(JSON.parse(String(results[0]!.content))).toEqual({ error: interrupted });
    expect(results[1]!.content).toBe('1');
    // The same tools after the restart as before it: the list recorded at the run's start...
    expect(offeredTools(after!)).toEqual(offeredTools(before!));
    expect(offeredTools(after!).map((tool) => tool.function.description)).toEqual([
      'Appends a line to a file: every call adds one more (not idempotent).',
      'Counts the lines of a file (listing v1).',
    ]);
    // ...though the server, asked now, lists another.
    const now = (
      await listServerTools(pythonWithMcp(), [pythonMcpScript], {
        PATH: process.env['PATH'] ?? '',
        PY_MCP_LISTING_FILE: listingFile,
      })
    ).find((tool) => tool.name === 'count_lines');
    expect(now?.description).toBe('Counts the lines of a file (listing v2).');
  });

  describe('kill -9 of the worker after the tool list was fetched: the new worker offers the recorded list, without listing again, and the call works', () => {
    let http: ChildProcess | undefined;
    let httpUrl = '';
    beforeAll(async () => {
      const port = await freePort();
      http = await startEverythingHttp(port);
      httpUrl = `http://127.0.0.1:${port}/mcp`;
    });
    afterAll(() => {
      http?.kill();
    });

    const cases: Array<{
      label: string;
      server: (folder: string) => Record<string, unknown>;
      call: (folder: string) => { name: string; arguments: string };
      result: (folder: string) => string;
      /** What the call did, seen from outside. */
      effect?: (folder: string) => void;
    }> = [
      {
        label: 'server-everything over stdio',
        server: (folder) => everythingStdio(join(folder, 'everything.pid'), { tools: ['echo', 'get-sum'] }),
        call: () => ({ name: 'echo', arguments: '{"message": "after the crash"}' }),
        result: () => 'Echo: after the crash',
      },
      {
        label: 'server-everything over streamable HTTP',
        server: () => ({ name: 'remote', url: httpUrl, tools: ['echo', 'get-sum'] }),
        call: () => ({ name: 'get-sum', arguments: '{"a": 20, "b": 22}' }),
        result: () => 'The sum of 20 and 22 is 42.',
      },
      {
        label: 'server-filesystem',
        server: (folder) => ({
          name: 'files',
          command: process.execPath,
          args: [filesystemServerBin(), folder],
          tools: ['write_file', 'read_text_file'],
        }),
        call: (folder) => ({
          name: 'write_file',
          arguments: JSON.stringify({ path: join(folder, 'note.txt'), content: 'written once' }),
        }),
        // Its text, then its structured content (which says the same in another form).
        result: (folder) => {
          const text = `Successfully wrote to ${join(folder, 'note.txt')}`;
          return `${text}\n${JSON.stringify({ content: text })}`;
        },
        effect: (folder) => expect(readFileSync(join(folder, 'note.txt'), 'utf8')).toBe('written once'),
      },
    ];

    for (const { label, server, call, result, effect } of cases) {
      it(
        label,
        async () => {
          const folder = realpathSync(mkdtempSync(join(tmpdir(), 'patchloop-mcp-kill-')));
          const fake = await FakeModelServer.start({
            // The first model call never answers: the worker dies with the tool list recorded and the call open.
            script: [{ kind: 'hang' }, callTools([{ id: 'k1', ...call(folder) }]), reply('done')],
          });
          const agents = [
            {
              name: 'survivor',
              instructions: 'Use the tools.',
              mcp_servers: [server(folder)],
              limits: { heartbeat_timeout_seconds: 3 },
            } as AgentDefinitionInput,
          ];
          const { client, start } = await workerProcesses(fake, agents, 'mcp-kill', cleanups);
          const first = await start();
          const run = await client.start({ agent: 'survivor', input: 'go' });
          await eventually(() => (fake.requests.length === 1 ? true : undefined), 30_000, 'the first model call');
          await first.kill('SIGKILL');
          await start();

          const outcome = await run.result();
          expect(outcome.status).toBe('completed');
          expect(fake.requests).toHaveLength(3);
          const [before, retried, after] = fake.requests.map((request) => request.body);
          // The retried call and the one after the tools offer what was listed before the crash...
          expect(offeredTools(before!).length).toBe(2);
          expect(offeredTools(retried!)).toEqual(offeredTools(before!));
          expect(offeredTools(after!)).toEqual(offeredTools(before!));
          // ...from the list recorded once: the new worker did not list the tools again.
          const activities = historyText(await run.workflow.fetchHistory()).match(/"activityType":\{"name":"[^"]+"/g);
          expect(activities?.filter((entry) => entry.includes('describeAgent'))).toHaveLength(1);
          expect(activities?.some((entry) => entry.includes('relistMcpTools'))).toBe(false);
          expect(toolMessages(after!)).toEqual([{ role: 'tool', tool_call_id: 'k1', content: result(folder) }]);
          effect?.(folder);
        },
        120_000,
      );
    }
  });

  describe('in one worker', () => {
    it('an abort during a call sends notifications/cancelled: the server cancels its work, the run ends aborted', async ({
      startWorld,
    }) => {
      const { folder, journal } = scratch();
      const world = await startWorld({
        agents: [
          {
            name: 'waiter',
            instructions: 'Wait.',
            mcp_servers: [pythonMcpServer({ tools: ['wait_for'], env: { PY_MCP_JOURNAL: journal } })],
          } as AgentDefinitionInput,
        ],
        fake: {
          script: [
            callTools([{ id: 'w1', name: 'wait_for', arguments: JSON.stringify({ release: join(folder, 'never') }) }]),
          ],
        },
      });
      const run = await world.client.start({ agent: 'waiter', input: 'wait' });
      await eventually(() => (journaled(journal).includes('wait_for started') ? true : undefined));
      await run.abort('user_interrupt');
      const result = await run.result();
      expect(result.status).toBe('aborted');
      // The server itself saw the cancellation: its task was cancelled, not left running.
      await eventually(() => (journaled(journal).includes('wait_for cancelled') ? true : undefined), 10_000);
      expect(journaled(journal)).toEqual(['wait_for started', 'wait_for cancelled']);
    });

    it('continue-as-new lists the MCP tools again: a changed description is offered from then on; a server that cannot list keeps the tools the run had', async ({
      startWorld,
    }) => {
      const { folder, journal } = scratch();
      const listingFile = join(folder, 'listing.txt');
      writeFileSync(listingFile, 'v1');
      const release = (name: string) => join(folder, name);
      const world = await startWorld({
        agents: [
          {
            name: 'relister',
            instructions: 'Count.',
            mcp_servers: [
              pythonMcpServer({
                tools: ['count_lines', 'wait_for'],
                env: { PY_MCP_JOURNAL: journal, PY_MCP_LISTING_FILE: listingFile },
              }),
            ],
          } as AgentDefinitionInput,
        ],
        fake: {
          script: [
            callTools([{ id: 'w1', name: 'wait_for', arguments: JSON.stringify({ release: release('one') }) }]),
            callTools([{ id: 'w2', name: 'wait_for', arguments: JSON.stringify({ release: release('two') }) }]),
            reply('done'),
          ],
        },
      });
      // Due at every iteration boundary: the run continues as new after each tool batch.
      const run = await world.client.start({
        agent: 'relister',
        input: 'count',
        continue_as_new: { max_history_events: 10 },
      });
      const started = (count: number) => () =>
        journaled(journal).filter((line) => line === 'wait_for started').length === count ? true : undefined;
      // While the first call runs, the server's listing changes; the next run lists it.
      await eventually(started(1));
      writeFileSync(listingFile, 'v2');
      writeFileSync(release('one'), '');
      // While the second runs, the server loses what it lists from: listing fails at the next boundary.
      await eventually(started(2));
      rmSync(listingFile);
      writeFileSync(release('two'), '');
      const result = await run.result();
      expect(result.status).toBe('completed');

      const descriptions = world.fake.requests.map(
        (request) =>
          offeredTools(request.body).find((tool) => tool.function.name === 'count_lines')?.function.description,
      );
      expect(descriptions).toEqual([
        'Counts the lines of a file (listing v1).',
        'Counts the lines of a file (listing v2).',
        // The third run could not list: it kept what the second had.
        'Counts the lines of a file (listing v2).',
      ]);
      // Each continued run recorded the listing and what it changed, as its first activity.
      const relisted = (await run.status()).events.filter((event) => event.event_type === 'mcp_tools_relisted');
      expect(relisted).toEqual([
        expect.objectContaining({ added: [], removed: [], changed: ['count_lines'] }),
        expect.objectContaining({
          added: [],
          removed: [],
          changed: [],
          problem: expect.stringMatching(/^MCP server 'python' could not list its tools: /),
        }),
      ]);
      expect(world.fake.requests).toHaveLength(3);
      // The last run of the chain: the relisting (patched) that failed and kept the tools.
      await recordHistory(run, 'mcp-relisted-at-continue-as-new');
    });

    it('a server that died mid-call: the call is reported as possibly done; continue-as-new starts the server again though it takes 12 s, and lists its tools', async ({
      startWorld,
    }) => {
      const { folder, journal } = scratch();
      const world = await startWorld({
        agents: [
          {
            name: 'restarter',
            instructions: 'Wait.',
            mcp_servers: [
              pythonMcpServer({
                tools: ['wait_for', 'multiply'],
                env: { PY_MCP_JOURNAL: journal, PY_MCP_START_DELAY: '12' },
              }),
            ],
          } as AgentDefinitionInput,
        ],
        fake: {
          script: [
            callTools([{ id: 'w1', name: 'wait_for', arguments: JSON.stringify({ release: join(folder, 'never') }) }]),
            callTools([{ id: 'm1', name: 'multiply', arguments: '{"a": 6, "b": 7}' }]),
            reply('done'),
          ],
        },
      });
      // Due at every iteration boundary: the run continues as new after each tool batch, and lists again.
      const run = await world.client.start({
        agent: 'restarter',
        input: 'wait',
        continue_as_new: { max_history_events: 10 },
      });
      await eventually(
        () => (journaled(journal).includes('wait_for started') ? true : undefined),
        60_000,
        'the call on the server',
      );
      process.kill(journalEntries(journal)[0]!.pid, 'SIGKILL');
      const result = await run.result();
      expect(result.status).toBe('completed');
      // The call the server died in had been sent, and wait_for is not marked read-only or idempotent.
      const lost = (JSON.parse(String(toolMessages(world.fake.requests[1]!.body)[0]!.content)) as { error: string })
        .error;
      expect(lost).toMatch(
        /^Tool 'wait_for' failed during execution or result parsing with arguments \{.*\}: MCP server 'python' failed: MCP error -32000: Connection closed.*\. The call had been sent, and the server does not mark the tool readOnlyHint or idempotentHint: it may or may not have taken effect\. Check before calling it again\.$/,
      );
      // The boundary after it started the server again, within its start_timeout_seconds, and listed it.
      const relisted = (await run.status()).events.filter((event) => event.event_type === 'mcp_tools_relisted');
      expect(relisted.length).toBeGreaterThanOrEqual(1);
      for (const event of relisted) expect(event).not.toHaveProperty('problem');
      expect(toolMessages(world.fake.requests[2]!.body)[1]).toEqual({
        role: 'tool',
        tool_call_id: 'm1',
        content: '42.0',
      });
      expect(world.fake.requests).toHaveLength(3);
    });

    it('timeouts: progress keeps a long call alive past its idle timeout; silence ends a call at it; max_call_seconds ends one that keeps reporting; each cancelled on its server', async ({
      startWorld,
    }) => {
      const { folder, journal } = scratch();
      const never = join(folder, 'never');
      const world = await startWorld({
        agents: [
          {
            name: 'patient',
            instructions: 'Wait.',
            mcp_servers: [
              {
                name: 'everything',
                command: process.execPath,
                args: [everythingLauncher, join(folder, 'everything.pid')],
                tools: ['trigger-long-running-operation'],
                timeout_seconds: 2,
              },
              pythonMcpServer({
                tools: ['count_lines', 'wait_for'],
                env: { PY_MCP_JOURNAL: journal },
                timeout_seconds: 2,
                max_call_seconds: 5,
              }),
            ],
          } as AgentDefinitionInput,
        ],
        fake: {
          script: [
            callTools([
              // Six seconds with a progress notification every 0.3 s: three times its idle timeout.
              { id: 'long', name: 'trigger-long-running-operation', arguments: '{"duration": 6, "steps": 20}' },
              // Never answers and reports nothing.
              { id: 'silent', name: 'count_lines', arguments: JSON.stringify({ path: never, release: never }) },
              // Never answers, but reports progress all the time.
              { id: 'chatty', name: 'wait_for', arguments: JSON.stringify({ release: never }) },
            ]),
            reply('done'),
          ],
        },
      });
      const run = await world.client.start({ agent: 'patient', input: 'wait' });
      const result = await run.result();
      expect(result.status).toBe('completed');
      const results = toolMessages(world.fake.requests[1]!.body);
      expect(results.map((message) => message.tool_call_id)).toEqual(['long', 'silent', 'chatty']);
      expect(results[0]!.content).toBe('Long running operation completed. Duration: 6 seconds, Steps: 20.');
      expect(JSON.parse(String(results[1]!.content))).toEqual({
        error: "Tool 'count_lines' (MCP server 'python') timed out: no answer and no progress for 2 s",
      });
      // wait_for is not marked read-only or idempotent: timed out, it may have done its work all the same.
      expect(JSON.parse(String(results[2]!.content))).toEqual({
        error:
          "Tool 'wait_for' (MCP server 'python') timed out after 5 s in all (max_call_seconds). The server was told " +
          'to cancel it, but the server does not mark the tool readOnlyHint or idempotentHint: it may or may not have ' +
          'taken effect. Check before calling it again.',
      });
      // Both calls that timed out were cancelled on the server (notifications/cancelled), not left running.
      await eventually(
        () => (journaled(journal).filter((line) => line.endsWith('cancelled')).length === 2 ? true : undefined),
        10_000,
      );
      expect(journaled(journal).sort()).toEqual([
        'count_lines cancelled',
        'count_lines started',
        'wait_for cancelled',
        'wait_for started',
      ]);
    });
  });
});
