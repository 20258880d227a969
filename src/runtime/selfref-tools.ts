import { z } from 'zod';
import {
  collapse,
  normalizeExperienceText,
  normalizeSummary,
  renderSummary,
  trim,
  type JsonObject,
  type Mutation,
  type SummaryPayload,
} from '../context';
import type { ToolDescriptor } from './agent';
import { sharedSchema } from '../context/shared-schema';
import { providerJsonSchema } from './json-schemas';

/**
 * The SelfRef primitives as ordinary tools (spec section 6). Remember, forget and compact only queue
 * intents; the intents become patches at the next iteration's hook step (6.2). Pure: the tool batch
 * runs them like any tool, and workflows collect their intents.
 */

const SELFREF_REMEMBER = 'selfref_remember';
const SELFREF_FORGET = 'selfref_forget';
const SELFREF_COMPACT = 'selfref_compact';
export const SELFREF_FORK = 'selfref_fork';
const SELFREF_TOOL_NAMES: readonly string[] = [SELFREF_REMEMBER, SELFREF_FORGET, SELFREF_COMPACT, SELFREF_FORK];

export type SelfRefIntent =
  | { kind: 'remember'; text: string }
  | { kind: 'forget'; experience_id: string }
  | { kind: 'compact'; summary: SummaryPayload; rendered: string; remember: string[] };

/** The durable queue (6.2): ordered remember/forget intents and a single compaction slot. */
export interface SelfRefQueue {
  intents: Array<Extract<SelfRefIntent, { kind: 'remember' | 'forget' }>>;
  compaction: Extract<SelfRefIntent, { kind: 'compact' }> | null;
}

export function queueIntent(queue: SelfRefQueue, intent: SelfRefIntent): void {
  if (intent.kind === 'compact') queue.compaction = intent;
  else queue.intents.push(intent);
}

/** `collect_context_mutations` of the SelfRef queue (6.2): the summary first, then the intents in order. */
export function collectSelfRefMutations(queue: SelfRefQueue): Mutation[] {
  const mutations: Mutation[] = [];
  if (queue.compaction) {
    mutations.push({
      type: 'ContextSummaryMutation',
      summary_message: { role: 'assistant', content: queue.compaction.rendered },
      remember: queue.compaction.remember.map((text) => ({ text })),
    });
  }
  for (const intent of queue.intents) {
    mutations.push(
      intent.kind === 'remember'
        ? { type: 'ExperienceRememberMutation', text: intent.text }
        : { type: 'ExperienceForgetMutation', experience_id: intent.experience_id },
    );
  }
  queue.compaction = null;
  queue.intents = [];
  return mutations;
}

export interface SelfRefToolOutcome {
  value: unknown;
  intent?: SelfRefIntent;
}

/** Runs remember, forget or compact (6.3 to 6.5). Throws with the spec's message on invalid arguments. */
export function runSelfRefTool(name: string, args: JsonObject, memoryKey: string): SelfRefToolOutcome {
  switch (name) {
    case SELFREF_REMEMBER: {
      const text = normalizeExperienceText(args['text']);
      return { value: { id: `pending::${text}`, text }, intent: { kind: 'remember', text } };
    }
    case SELFREF_FORGET: {
      const id = args['experience_id'];
      if (typeof id !== 'string') throw new Error('experience_id must be a string');
      return { value: true, intent: { kind: 'forget', experience_id: id } };
    }
    case SELFREF_COMPACT: {
      const summary = normalizeSummary(args);
      const remember = rememberTexts(args['remember']);
      const rendered = renderSummary(summary);
      return {
        value: { status: 'queued', active_key: memoryKey, summary, assistant_message: rendered, remember },
        intent: { kind: 'compact', summary, rendered, remember },
      };
    }
    default:
      throw new Error(`not a SelfRef tool: ${name}`);
  }
}

function rememberTexts(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new Error('remember must be a list[str]');
  return value.flatMap((entry: unknown) => {
    if (typeof entry !== 'string') throw new Error('experience text must be a string');
    return trim(entry) === '' ? [] : [collapse(entry)];
  });
}

/** Arguments of a fork call, checked. */
export function forkMessage(args: JsonObject): string {
  const message = args['message'];
  if (typeof message !== 'string' || trim(message) === '') throw new Error('message must be a non-empty string');
  return message;
}

// Module-level schemas come from the shared registry: one instance per worker thread, not per run.
const summaryFields = sharedSchema('runtime/selfref-tools#summaryFields', () => ({
  goal: z.string().describe('What the whole task is for.'),
  instruction: z.string().describe('How the user wants it done.'),
  discoveries: z.array(z.string()).describe('Facts learned so far that later work needs.'),
  completed: z.array(z.string()).describe('Work already done.'),
  current_status: z.string().describe('Where things stand now.'),
  likely_next_work: z.array(z.string()).describe('What probably comes next.'),
  relevant_files_directories: z.array(z.string()).describe('Paths that matter.'),
  remember: z.array(z.string()).optional().describe('Durable experiences to keep in the system prompt.'),
}));

function descriptor(name: string, description: string, parameters: z.ZodType, bestPractices: string[]): ToolDescriptor {
  return { name, description, parameters: providerJsonSchema(parameters), best_practices: bestPractices };
}

/** The descriptors an agent with SelfRef enabled offers the model, alongside its own tools. */
export function selfRefToolDescriptors(): ToolDescriptor[] {
  return [
    descriptor(
      SELFREF_REMEMBER,
      'Keep a durable experience in your system prompt for the rest of this conversation.',
      z.object({ text: z.string() }),
      ['Remember stable preferences and lessons, not transient details.'],
    ),
    descriptor(
      SELFREF_FORGET,
      'Remove an experience from your system prompt by its id (shown as [exp_N]).',
      z.object({ experience_id: z.string() }),
      [],
    ),
    descriptor(
      SELFREF_COMPACT,
      'Replace the whole working context with a structured summary; the next call sees only the system prompt and the summary.',
      z.object(summaryFields),
      ['Compact when the context grows long; put everything later work needs into the summary.'],
    ),
    descriptor(
      SELFREF_FORK,
      'Delegate a task to a forked copy of yourself that starts from your current context; returns its final answer.',
      z.object({ message: z.string() }),
      ['Give the fork one self-contained task; several forks in one batch run in parallel.'],
    ),
  ];
}

export function isSelfRefTool(name: string): boolean {
  return SELFREF_TOOL_NAMES.includes(name);
}
