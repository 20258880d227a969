import { z } from 'zod';
import { canonicalJson, repairToolArguments, type Message } from '../context';
import { sharedSchema } from '../context/shared-schema';
import type { ToolCallRequest } from './phases';

/**
 * Tool calls answered from a recorded run instead of running (evaluations, docs/fork-and-evals.md): a
 * call whose tool name and arguments (as JSON values, key order aside) match a recorded call gets that
 * call's result; one with no recording gets an error result, or runs the live tool when `fallthrough`
 * says so. Decided in workflow code from the run's input, so a replay answers the same.
 */
export const ToolRecordings = sharedSchema('runtime/tool-recordings#ToolRecordings', () =>
  z.strictObject({
    /** The run the results were recorded from (for the error a call with no recording gets). */
    from_run: z.string().min(1),
    calls: z.array(z.strictObject({ name: z.string(), arguments: z.string(), content: z.string() })),
    /** A call with no recording runs the live tool (else it gets an error result and runs nothing). */
    fallthrough: z.boolean().default(false),
  }),
);
export type ToolRecordings = z.infer<typeof ToolRecordings>;

/** The start of the error result a call with no recording gets (evaluations read it in the run's events). */
export const NO_RECORDING = 'no recorded result for this call';

/** The key a call is matched by: its tool and its arguments as canonical JSON. */
function callKey(name: string, argumentText: string): string {
  const parsed = repairToolArguments(argumentText);
  return `${name}\u0000${parsed.ok ? canonicalJson(parsed.value) : argumentText}`;
}

/** Every tool call of a transcript with its result, in order (what `ToolRecordings.calls` holds). */
export function recordedCalls(transcript: readonly Message[]): ToolRecordings['calls'] {
  const results = new Map<string, string>();
  for (const message of transcript)
    if (message['role'] === 'tool') {
      const content = message['content'];
      results.set(String(message['tool_call_id']), typeof content === 'string' ? content : JSON.stringify(content));
    }
  const calls: ToolRecordings['calls'] = [];
  for (const message of transcript) {
    const asked = message['tool_calls'];
    if (message['role'] !== 'assistant' || !Array.isArray(asked)) continue;
    for (const call of asked as Array<{ id: string; function: { name: string; arguments: string } }>) {
      const content = results.get(call.id);
      if (content !== undefined) calls.push({ name: call.function.name, arguments: call.function.arguments, content });
    }
  }
  return calls;
}

/**
 * The recorded answer of each call of a batch that has one, by position (undefined: none). Calls with
 * the same tool and arguments take the recorded results in their order, the last one again once used up.
 * `used` counts what earlier batches of the run took (kept by the caller).
 */
export function recordedAnswers(
  recordings: ToolRecordings,
  calls: readonly ToolCallRequest[],
  used: Map<string, number>,
): Array<string | undefined> {
  const byKey = new Map<string, string[]>();
  for (const call of recordings.calls) {
    const key = callKey(call.name, call.arguments);
    byKey.set(key, [...(byKey.get(key) ?? []), call.content]);
  }
  return calls.map((call) => {
    const key = callKey(call.name, call.arguments);
    const answers = byKey.get(key);
    if (!answers) return undefined;
    const index = used.get(key) ?? 0;
    used.set(key, index + 1);
    return answers[Math.min(index, answers.length - 1)];
  });
}
