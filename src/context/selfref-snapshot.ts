import { z } from 'zod';
import { Experience, renderSystemPromptWithExperiences, splitSystemPromptExperiences } from './experiences';
import { removeFrameworkBlocks } from './framework-blocks';
import { cloneJson, isPlainObject, JsonObject } from './json';
import { Message } from './messages';
import { parseSummary, renderSummary, SummaryPayload } from './summary';
import { sharedSchema } from './shared-schema';

/** The SelfRef state a transcript carries (spec 2.3, `DataFromSelfRef` in the reference). */
export const SelfRefSnapshot = sharedSchema('context/selfref-snapshot#SelfRefSnapshot', () =>
  z.strictObject({
    base_system_prompt: z.string(),
    experiences: z.array(Experience),
    summary: SummaryPayload.nullable(),
    summary_message: JsonObject.nullable(),
    working_messages: z.array(Message),
  }),
);
export type SelfRefSnapshot = z.infer<typeof SelfRefSnapshot>;

/** `parse_data_from_selfref` (spec 5.4). Output shares nothing with the input. */
export function parseSelfRefSnapshot(messages: readonly Message[]): SelfRefSnapshot {
  let lastSystemContent = '';
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index]!;
    if (message['role'] === 'system' && typeof message['content'] === 'string') {
      lastSystemContent = message['content'];
      break;
    }
  }
  const { base, experiences } = splitSystemPromptExperiences(removeFrameworkBlocks(lastSystemContent));
  let summary: SummaryPayload | null = null;
  let summaryMessage: Message | null = null;
  const workingMessages: Message[] = [];
  for (const message of messages) {
    const role = message['role'];
    if (role === 'system') continue;
    if (summary === null && role === 'assistant') {
      const parsed = parseSummary(message['content']);
      if (parsed !== null) {
        summary = parsed;
        summaryMessage = cloneJson(message);
        continue;
      }
    }
    workingMessages.push(cloneJson(message));
  }
  return {
    base_system_prompt: base,
    experiences,
    summary,
    summary_message: summaryMessage,
    working_messages: workingMessages,
  };
}

/** `build_context_messages_from_state_data` (spec 5.5): the canonical transcript of a SelfRef state. */
export function buildCanonicalMessages(state: SelfRefSnapshot): Message[] {
  const output: Message[] = [];
  const systemContent = renderSystemPromptWithExperiences(state.base_system_prompt, state.experiences);
  if (systemContent !== '') output.push({ role: 'system', content: systemContent });
  if (isPlainObject(state.summary)) output.push({ role: 'assistant', content: renderSummary(state.summary) });
  else if (isPlainObject(state.summary_message)) output.push(cloneJson(state.summary_message));
  for (const message of state.working_messages) output.push(withoutReasoning(message));
  return output;
}

export function withoutReasoning(message: Message): Message {
  const copy = cloneJson(message);
  delete copy['reasoning_details'];
  return copy;
}
