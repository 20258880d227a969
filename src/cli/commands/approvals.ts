import { createInterface, type Interface } from 'node:readline';
import type { RunEvent } from '../../runtime';
import type { PatchloopClient, RunHandle } from '../../client/patchloop-client';
import { parseCommandArgs, requirePositional } from '../arguments';
import { UsageError } from '../errors';

type Print = (line: string) => void;

const APPROVALS_USAGE = 'patchloop approvals <id>';
/** The gated tool calls of a run or session that wait for a decision. */
export async function approvalsCommand(client: PatchloopClient, args: string[]): Promise<unknown> {
  const { positionals } = parseCommandArgs(args, {}, APPROVALS_USAGE);
  const id = requirePositional(positionals, 0, 'id', APPROVALS_USAGE);
  return { workflow_id: id, pending_approvals: await client.run(id).pendingApprovals() };
}

const APPROVE_USAGE = 'patchloop approve <id> <call id> [--reason TEXT]';
export async function approveCommand(client: PatchloopClient, args: string[]): Promise<unknown> {
  const { values, positionals } = parseCommandArgs(args, { reason: { type: 'string' } }, APPROVE_USAGE);
  const id = requirePositional(positionals, 0, 'id', APPROVE_USAGE);
  const call = requirePositional(positionals, 1, 'call id', APPROVE_USAGE);
  return { workflow_id: id, ...(await client.run(id).approve(call, values.reason)) };
}

const REJECT_USAGE = 'patchloop reject <id> <call id> --reason TEXT';
export async function rejectCommand(client: PatchloopClient, args: string[]): Promise<unknown> {
  const { values, positionals } = parseCommandArgs(args, { reason: { type: 'string' } }, REJECT_USAGE);
  const id = requirePositional(positionals, 0, 'id', REJECT_USAGE);
  const call = requirePositional(positionals, 1, 'call id', REJECT_USAGE);
  // The model reads the reason: a rejection without one teaches it nothing.
  if (!values.reason?.trim()) throw new UsageError(`--reason is required: the model sees it\nusage: ${REJECT_USAGE}`);
  return { workflow_id: id, ...(await client.run(id).reject(call, values.reason)) };
}

/** Asks a question on the terminal and resolves with the answer. */
export type Ask = (question: string) => Promise<string>;

/** A question-asker on this terminal, or undefined when stdin or stdout is not one (pipes, CI). */
export function terminalAsker(): { ask: Ask; close(): void } | undefined {
  if (!process.stdin.isTTY || !process.stdout.isTTY) return undefined;
  let rl: Interface | undefined;
  return {
    ask: (question) =>
      new Promise((resolve) => {
        rl ??= createInterface({ input: process.stdin, output: process.stdout, terminal: true });
        rl.question(question, resolve);
      }),
    close: () => rl?.close(),
  };
}

/**
 * Puts one `approval_requested` event to the person at the terminal: y approves, anything else asks
 * for a reason and rejects. A call decided meanwhile (elsewhere, or timed out) is not asked about.
 */
export async function askApproval(run: RunHandle, event: RunEvent, ask: Ask, print: Print): Promise<void> {
  if (event.event_type !== 'approval_requested') return;
  const waiting = await run.pendingApprovals().catch(() => []);
  if (!waiting.some((entry) => entry.tool_call_id === event.tool_call_id)) return;
  const answer = await ask(`approve ${event.tool_name} ${JSON.stringify(event.arguments)}? [y/n] `);
  try {
    if (/^y(es)?$/i.test(answer.trim())) {
      await run.approve(event.tool_call_id);
      print(`  approved ${event.tool_call_id}`);
      return;
    }
    const reason = (await ask('reason (the model sees it): ')).trim() || 'rejected at the terminal';
    await run.reject(event.tool_call_id, reason);
    print(`  rejected ${event.tool_call_id}: ${reason}`);
  } catch (error) {
    print(`  not recorded: ${(error as Error).message}`);
  }
}
