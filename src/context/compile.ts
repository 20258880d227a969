import { applyMutations, applyMutationsSharing } from './apply-mutations';
import { renderSystemPromptWithExperiences } from './experiences';
import { cloneJson, isPlainObject } from './json';
import type { Message } from './messages';
import type { Mutation } from './mutations';
import type { PromptContract } from './prompt-contract';
import { renderLlmInputMessages } from './render-llm-input';
import { parseSelfRefSnapshot, type SelfRefSnapshot } from './selfref-snapshot';
import { parseSummary } from './summary';

export interface ReducedTurnContext {
  transcript: Message[];
  selfref_snapshot: SelfRefSnapshot | null;
}

export interface CompiledTurn {
  reduced_transcript: Message[];
  transcript: Message[];
  system_prompt: string | null;
  llm_messages: Message[];
  selfref_snapshot: SelfRefSnapshot | null;
}

/** The patches applied: on copies, or (`share`) sharing what they keep (`checked`: see `applyMutationsSharing`). */
function withPatches(
  transcript: readonly Message[],
  mutations: readonly Mutation[],
  share: boolean,
  checked: boolean,
): Message[] {
  return share ? applyMutationsSharing(transcript, mutations, checked) : applyMutations(transcript, mutations);
}

/** Stage 1 (spec 4.2): apply the patches, then decide which SelfRef snapshot drives the prompt. */
export function reduceTurnContext(
  transcript: readonly Message[],
  mutations: readonly Mutation[],
  snapshot: SelfRefSnapshot | null,
  share = false,
  checked = false,
): ReducedTurnContext {
  const applied = withPatches(transcript, mutations, share, checked);
  if (snapshot === null) return { transcript: applied, selfref_snapshot: null };
  const parsed = parseSelfRefSnapshot(applied);
  const carriesMarkers =
    parsed.experiences.length > 0 ||
    parsed.summary !== null ||
    parsed.summary_message !== null ||
    applied.some((message) => parseSummary(message['content']) !== null) ||
    mutations.some(
      (mutation) => mutation.type === 'ExperienceRememberMutation' || mutation.type === 'ExperienceForgetMutation',
    );
  return { transcript: applied, selfref_snapshot: carriesMarkers ? parsed : cloneJson(snapshot) };
}

/** Stage 2 (spec 4.3): resolve and place the system prompt, then render the blocks. */
export function convertToLlmRequest(
  reduced: ReducedTurnContext,
  contract: PromptContract,
  share = false,
): Omit<CompiledTurn, 'reduced_transcript'> {
  const systemPrompt = resolveSystemPrompt(reduced.transcript, contract, reduced.selfref_snapshot);
  const transcript = placeSystemPrompt(
    share ? [...reduced.transcript] : reduced.transcript.map(cloneJson),
    systemPrompt,
  );
  return {
    transcript,
    system_prompt: systemPrompt,
    llm_messages: renderLlmInputMessages(
      transcript,
      contract.tool_prompt_specs,
      contract.include_must_principles,
      share,
    ),
    selfref_snapshot: reduced.selfref_snapshot === null ? null : cloneJson(reduced.selfref_snapshot),
  };
}

/** `compile_invocation_turn` (spec 1.2): `render(config, patch(transcript, patches))`. Pure. */
export function compileInvocationTurn(
  contract: PromptContract,
  transcript: readonly Message[],
  mutations: readonly Mutation[] = [],
  snapshot: SelfRefSnapshot | null = null,
): CompiledTurn {
  const reduced = reduceTurnContext(transcript, mutations, snapshot);
  // `reduced` is ours alone, so its transcript is returned as it is; stage 2 copies what it changes.
  return { reduced_transcript: reduced.transcript, ...convertToLlmRequest(reduced, contract) };
}

/**
 * The messages of `compileInvocationTurn(contract, transcript, [], snapshot)`, deep-equal, for a caller
 * that treats messages as values (the workflow serializes them at once): they share every message the
 * compile leaves unchanged with the transcript, so a long transcript costs no copies. `checked`: the
 * transcript is what a commit returned (see `applyMutationsSharing`).
 */
export function compileRequestMessages(
  contract: PromptContract,
  transcript: readonly Message[],
  snapshot: SelfRefSnapshot | null,
  checked = false,
): Message[] {
  return convertToLlmRequest(reduceTurnContext(transcript, [], snapshot, true, checked), contract, true).llm_messages;
}

/**
 * `compile_context` (spec 4.6): the loop's commit. With SelfRef on, the snapshot is always re-parsed.
 * `share`: for a caller that treats messages as values (the workflow's own state), the transcript shares
 * the messages it keeps with the input (see `applyMutationsSharing`, and its `checked`); deep-equal
 * either way.
 */
export function compileContext(
  transcript: readonly Message[],
  mutations: readonly Mutation[],
  selfrefEnabled: boolean,
  share = false,
  checked = false,
): { transcript: Message[]; selfref_snapshot: SelfRefSnapshot | null } {
  const applied = withPatches(transcript, mutations, share, checked);
  return { transcript: applied, selfref_snapshot: selfrefEnabled ? parseSelfRefSnapshot(applied) : null };
}

function resolveSystemPrompt(
  transcript: readonly Message[],
  contract: PromptContract,
  snapshot: SelfRefSnapshot | null,
): string | null {
  if (snapshot !== null) return renderSystemPromptWithExperiences(snapshot.base_system_prompt, snapshot.experiences);
  if (contract.system_prompt !== null) return contract.system_prompt;
  const system = transcript.find((message) => message['role'] === 'system' && typeof message['content'] === 'string');
  if (system) return system['content'] as string;
  return contract.base_instruction !== '' ? contract.base_instruction : null;
}

/** Places the prompt in a copy of the array; a changed system message is a new object (messages are values). */
function placeSystemPrompt(transcript: Message[], systemPrompt: string | null): Message[] {
  const first = transcript[0];
  if (isPlainObject(first) && first['role'] === 'system') {
    if (systemPrompt) transcript[0] = { ...cloneJson(first), content: systemPrompt };
    else transcript.shift();
  } else if (systemPrompt) {
    transcript.unshift({ role: 'system', content: systemPrompt });
  }
  return transcript;
}
