import { createInterface, type Interface } from 'node:readline';
import type { ApprovalAccepted, RunEvent } from '../../runtime';
import type { PatchloopClient, RunHandle } from '../../client/patchloop-client';
import { parseCommand } from '../arguments';
import { UsageError } from '../errors';
import { explainUnavailable } from '../preflight';
import { answeredByWorker, appliedByWorker } from '../worker-watch';
import { APPROVALS_SYNTAX, APPROVE_SYNTAX, REJECT_SYNTAX } from '../syntax';

type Print = (line: string) => void;

/**
 * The gated tool calls of a run or session that wait for a decision (none for a run that has ended).
 * A worker answers the query: while none does, the command says so and waits for one.
 */
export async function approvalsCommand(client: PatchloopClient, args: string[]): Promise<unknown> {
  const id = parseCommand(args, APPROVALS_SYNTAX).positionals['id']!;
  const run = client.run(id);
  const description = await run.workflow.describe().catch((error: unknown) => explainUnavailable(run, error));
  if (description.status.name !== 'RUNNING') return { workflow_id: id, pending_approvals: [] };
  return {
    workflow_id: id,
    pending_approvals: await answeredByWorker(run, client.taskQueue, () => run.pendingApprovals()),
  };
}

export async function approveCommand(client: PatchloopClient, args: string[]): Promise<unknown> {
  const { values, positionals } = parseCommand(args, APPROVE_SYNTAX);
  const call = positionals['call id']!;
  return decision(client, positionals['id']!, (run) => run.approve(call, values.reason, values.run));
}

export async function rejectCommand(client: PatchloopClient, args: string[]): Promise<unknown> {
  const { values, positionals } = parseCommand(args, REJECT_SYNTAX);
  const call = positionals['call id']!;
  // The model reads the reason: a rejection without one teaches it nothing.
  const reason = values.reason;
  if (!reason?.trim()) throw new UsageError(`--reason is required: the model sees it\nusage: ${REJECT_SYNTAX.usage}`);
  return decision(client, positionals['id']!, (run) => run.reject(call, reason, values.run));
}

/**
 * A decision (update 'approve'), applied by a worker: while none takes the run's task the command says
 * so and waits; on a run that has ended or does not exist it says which (exit 4 or 1).
 */
async function decision(
  client: PatchloopClient,
  id: string,
  decide: (run: RunHandle) => Promise<ApprovalAccepted>,
): Promise<unknown> {
  const run = client.run(id);
  const accepted = await appliedByWorker(run, client.taskQueue, () => decide(run)).catch((error: unknown) =>
    explainUnavailable(run, error, 'nothing of it waits for a decision'),
  );
  return { workflow_id: id, ...accepted };
}

/** Asks a question on the terminal and resolves with the answer. */
export type Ask = (question: string) => Promise<string>;

/**
 * A question-asker on this terminal, or undefined when stdin or stdout is not one (pipes, CI). Ctrl-C
 * at a question leaves the call undecided, then ends as `onInterrupt` says.
 */
export function terminalAsker(onInterrupt: () => never): { ask: Ask; close(): void } | undefined {
  if (!process.stdin.isTTY || !process.stdout.isTTY) return undefined;
  let rl: Interface | undefined;
  const close = () => {
    rl?.close();
    rl = undefined;
  };
  return {
    // One interface per question: between questions the terminal is back to normal (Ctrl-C included).
    ask: (question) =>
      new Promise((resolve) => {
        rl = createInterface({ input: process.stdin, output: process.stdout, terminal: true });
        rl.on('SIGINT', () => {
          close();
          process.stdout.write(
            '\n(not decided: the call still waits; decide later with patchloop approve or reject)\n',
          );
          onInterrupt();
        });
        rl.question(question, (answer) => {
          close();
          resolve(answer);
        });
      }),
    close,
  };
}

/**
 * Puts one `approval_requested` event to the person at the terminal: y approves, anything else asks
 * for a reason and rejects. A call decided meanwhile (elsewhere, or timed out) is not asked about.
 */
export async function askApproval(run: RunHandle, event: RunEvent, ask: Ask, print: Print): Promise<void> {
  if (event.event_type !== 'approval_requested') return;
  // A sub-agent's request (forwarded from its run): decided on this run, which sends it down the tree.
  const owner = event.origin?.agent_call_id;
  const below = owner !== undefined && owner !== run.workflowId ? owner : undefined;
  // The same request, not just the same id (providers reuse ids such as call_0 from batch to batch).
  const waiting = await run.pendingApprovals().catch(() => []);
  const same = (entry: (typeof waiting)[number]) =>
    entry.tool_call_id === event.tool_call_id &&
    entry.requested_at === event.requested_at &&
    entry.workflow_id === below;
  if (!waiting.some(same)) return;
  const answer = await ask(`approve ${event.tool_name} ${JSON.stringify(event.arguments)}? [y/n] `);
  try {
    if (/^y(es)?$/i.test(answer.trim())) {
      await run.approve(event.tool_call_id, undefined, below);
      print(`  approved ${event.tool_call_id}`);
      return;
    }
    const reason = (await ask('reason (the model sees it): ')).trim() || 'rejected at the terminal';
    await run.reject(event.tool_call_id, reason, below);
    print(`  rejected ${event.tool_call_id}: ${reason}`);
  } catch (error) {
    print(`  not recorded: ${(error as Error).message}`);
  }
}
