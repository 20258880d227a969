import type { JsonValue, ToolCall } from '../context';
import { repairedArgumentText, repairToolArguments } from '../context';
import { providerUsage, type TokenUsage } from '../runtime';
import type { Reply } from './reply';

interface CallFragment {
  id: string;
  type: string;
  name: string;
  arguments: string;
  /** Argument values already reported as deltas, as text. */
  reported: Map<string, string>;
}

export interface ArgumentsDelta {
  tool_name: string;
  tool_call_id: string;
  argname: string;
  argcontent_delta: string;
}

/** Chunk fields the accumulator reads (chat-completions streaming shape, plus `reasoning_details`). */
export interface StreamChunk {
  choices?: Array<{
    delta?: {
      content?: string | null;
      /** A model's refusal (OpenAI): its text is the reply's. */
      refusal?: string | null;
      tool_calls?: Array<{
        index?: number;
        id?: string;
        type?: string;
        function?: { name?: string; arguments?: string };
      }>;
      reasoning_details?: JsonValue[];
    };
    finish_reason?: string | null;
  }>;
  usage?: (TokenUsage & { prompt_tokens_details?: { cached_tokens?: number | null } | null }) | null;
}

/** Assembles a streamed reply (spec 7.4): text, tool-call fragments merged by index, reasoning, usage. */
export class StreamAccumulator {
  content = '';
  finishReason: string | null = null;
  usage: TokenUsage | null = null;
  readonly reasoningDetails: JsonValue[] = [];
  private readonly fragments = new Map<number, CallFragment>();

  constructor(
    private readonly onText: (text: string) => void = () => undefined,
    private readonly onArguments: (delta: ArgumentsDelta) => void = () => undefined,
  ) {}

  add(chunk: StreamChunk): void {
    if (chunk.usage) this.usage = providerUsage(chunk.usage);
    for (const choice of chunk.choices ?? []) {
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
      const delta = choice.delta;
      if (!delta) continue;
      for (const text of [delta.content, delta.refusal]) {
        if (typeof text !== 'string' || text === '') continue;
        this.content += text;
        this.onText(text);
      }
      if (Array.isArray(delta.reasoning_details)) this.reasoningDetails.push(...delta.reasoning_details);
      for (const piece of delta.tool_calls ?? []) this.addFragment(piece);
    }
  }

  private addFragment(
    piece: NonNullable<NonNullable<NonNullable<StreamChunk['choices']>[number]['delta']>['tool_calls']>[number],
  ): void {
    const index = piece.index ?? 0;
    const fragment = this.fragments.get(index) ?? { id: '', type: '', name: '', arguments: '', reported: new Map() };
    // The last non-empty id, type and name win; argument pieces concatenate.
    if (piece.id) fragment.id = piece.id;
    if (piece.type) fragment.type = piece.type;
    if (piece.function?.name) fragment.name = piece.function.name;
    if (piece.function?.arguments) fragment.arguments += piece.function.arguments;
    this.fragments.set(index, fragment);
    if (piece.function?.arguments && fragment.id !== '') this.reportArgumentGrowth(fragment);
  }

  /** Spec 7.4: re-parse the accumulated arguments with auto-closing and report what each argument gained. */
  private reportArgumentGrowth(fragment: CallFragment): void {
    const parsed = repairToolArguments(fragment.arguments);
    if (!parsed.ok) return;
    for (const [argname, value] of Object.entries(parsed.value)) {
      const current = typeof value === 'string' ? value : JSON.stringify(value);
      const previous = fragment.reported.get(argname) ?? '';
      // Equal, or a shorter re-parse of a partial payload: nothing new.
      if (current === previous || (previous !== '' && previous.startsWith(current))) continue;
      const delta = previous !== '' && current.startsWith(previous) ? current.slice(previous.length) : current;
      fragment.reported.set(argname, current);
      if (delta !== '')
        this.onArguments({ tool_name: fragment.name, tool_call_id: fragment.id, argname, argcontent_delta: delta });
    }
  }

  /** The whole streamed reply, once the stream has proved complete. */
  reply(): Reply {
    return {
      content: this.content,
      toolCalls: this.toolCalls(),
      reasoningDetails: this.reasoningDetails,
      usage: this.usage,
      finishReason: this.finishReason,
      streamed: true,
    };
  }

  /** Calls with an id and a name, in index order, arguments repaired (spec 7.4, 7.6). */
  toolCalls(): ToolCall[] {
    return [...this.fragments.entries()]
      .sort(([left], [right]) => left - right)
      .map(([, fragment]) => fragment)
      .filter((fragment) => fragment.id !== '' && fragment.name !== '')
      .map((fragment) => ({
        id: fragment.id,
        type: fragment.type || 'function',
        function: { name: fragment.name, arguments: repairedArgumentText(fragment.arguments) },
      }));
  }
}
