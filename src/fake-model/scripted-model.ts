import { FakeModelServer, type ChatRequestBody, type RecordedRequest } from './server';
import {
  describeMatch,
  mismatches,
  quote,
  readRequest,
  stepReply,
  textMatches,
  type ModelScript,
  type ScriptedRequest,
} from './script';
import type { FakeStep } from './steps';

/** A conversation a script plays: known by its opening messages. */
interface Conversation {
  script: ModelScript;
  label: string;
  answered: Set<number>;
}

/**
 * Plays scripts: each request gets the step of its conversation's script that its number of model
 * replies points at. A request that does not fit its step (or comes after the last step, or belongs
 * to no script) is answered with HTTP 400 naming the script, the step, what it expected and what the
 * request had, so the run fails with that message; the same message is kept for `assertDone`.
 */
export class ScriptPlayer {
  readonly problems: string[] = [];
  private readonly conversations = new Map<string, Conversation>();
  private readonly used = new Set<ModelScript>();
  private playing: readonly ModelScript[];

  constructor(
    scripts: readonly ModelScript[],
    private readonly onProblem: (message: string) => void = () => undefined,
  ) {
    this.playing = [...scripts];
  }

  /** The scripts new conversations are played from. */
  get scripts(): readonly ModelScript[] {
    return this.playing;
  }

  /** Plays these scripts from now on, starting clean (`reset`): what one test means to use. */
  play(scripts: readonly ModelScript[]): void {
    this.reset();
    this.playing = [...scripts];
  }

  respond(body: ChatRequestBody): FakeStep {
    const { request, opening } = readRequest(body);
    const label = quote(request.firstUserMessage);
    const conversation = this.conversations.get(opening) ?? this.open(opening, request, label);
    if (!conversation)
      return this.refuse(
        `no script plays the conversation ${label} (scripts: ${this.scripts.map((script) => `'${script.name}'${script.when ? ` when ${describeWhen(script)}` : ''}`).join(', ') || "none: give the model the test's scripts with model.use(...)"})`,
      );
    const { script } = conversation;
    const step = script.steps[request.reply - 1];
    if (!step)
      return this.refuse(
        `script '${script.name}': the conversation ${label} asks for reply ${request.reply}, but the script has ${script.steps.length} step(s) (the last one should have ended it)`,
      );
    const wrong = mismatches(step, request);
    if (wrong.length > 0)
      return this.refuse(
        `script '${script.name}' step ${stepLabel(script, request.reply)}, reply ${request.reply} of the conversation ${label}: ${wrong.join('; ')}`,
      );
    conversation.answered.add(request.reply);
    return stepReply(step, request.reply);
  }

  /** What is wrong so far: refused requests, then steps no conversation reached, then scripts never used. */
  unfinished(): string[] {
    const found = [...this.problems];
    if (this.conversations.size === 0) found.push('no request arrived');
    for (const conversation of this.conversations.values()) {
      const { script } = conversation;
      const next = script.steps.findIndex((_, index) => !conversation.answered.has(index + 1));
      if (next >= 0)
        found.push(
          `script '${script.name}': the conversation ${conversation.label} never asked for step ${stepLabel(script, next + 1)} (${script.steps.length - next} of ${script.steps.length} step(s) unused)`,
        );
    }
    if (this.conversations.size > 0)
      for (const script of this.scripts.filter((candidate) => !this.used.has(candidate)))
        found.push(`script '${script.name}' played no conversation`);
    return found;
  }

  /** Forgets conversations and problems: the next test starts clean. */
  reset(): void {
    this.problems.length = 0;
    this.conversations.clear();
    this.used.clear();
  }

  private open(opening: string, request: ScriptedRequest, label: string): Conversation | undefined {
    const script = this.scripts.find(
      (candidate) =>
        candidate.when === undefined ||
        ((candidate.when.user === undefined || textMatches(candidate.when.user, request.firstUserMessage)) &&
          (candidate.when.system === undefined || textMatches(candidate.when.system, request.system))),
    );
    if (!script) return undefined;
    const conversation = { script, label, answered: new Set<number>() };
    this.conversations.set(opening, conversation);
    this.used.add(script);
    return conversation;
  }

  private refuse(message: string): FakeStep {
    const text = `scripted model: ${message}`;
    this.problems.push(text);
    this.onProblem(text);
    return { kind: 'error', status: 400, type: 'invalid_request_error', code: 'script_mismatch', message: text };
  }
}

function stepLabel(script: ModelScript, reply: number): string {
  const name = script.steps[reply - 1]?.name;
  return name ? `${reply} ('${name}')` : String(reply);
}

function describeWhen(script: ModelScript): string {
  const parts: string[] = [];
  if (script.when?.user !== undefined) parts.push(`the first user message is ${describeMatch(script.when.user)}`);
  if (script.when?.system !== undefined) parts.push(`the system prompt is ${describeMatch(script.when.system)}`);
  return parts.join(' and ');
}

export interface ScriptedModelOptions {
  port?: number;
  host?: string;
  /** Told each refused request's message as it happens (the CLI worker prints them). */
  onProblem?: (message: string) => void;
}

/**
 * A real OpenAI-compatible HTTP server (the `FakeModelServer`: Chat Completions and the Responses API,
 * streamed or not) playing model scripts: point a worker's `OPENAI_BASE_URL` at `url`. One server can
 * serve any number of runs at once; `assertDone()` throws when a request did not fit its step, a
 * conversation stopped before its script's last step, or a script played nothing. Tests that share one
 * model (and one worker) each say which scripts they play with `use(...)`, so a test answers only for
 * its own scripts.
 */
export class ScriptedModel {
  private constructor(
    readonly server: FakeModelServer,
    private readonly player: ScriptPlayer,
  ) {}

  /** A model playing `scripts`, or none until a test gives it its own (`use`). */
  static async start(
    scripts: ModelScript | readonly ModelScript[] = [],
    options: ScriptedModelOptions = {},
  ): Promise<ScriptedModel> {
    const player = new ScriptPlayer(scriptList([scripts]), options.onProblem);
    const server = await FakeModelServer.start({
      responder: (body) => player.respond(body),
      ...(options.port !== undefined ? { port: options.port } : {}),
      ...(options.host !== undefined ? { host: options.host } : {}),
    });
    return new ScriptedModel(server, player);
  }

  /** The base URL to give the worker (`OPENAI_BASE_URL`, or `config.openaiBaseUrl`). */
  get url(): string {
    return this.server.url;
  }

  /** Every request received, with its body. */
  get requests(): readonly RecordedRequest[] {
    return this.server.requests;
  }

  /** The messages of the requests refused so far. */
  get problems(): readonly string[] {
    return this.player.problems;
  }

  /** Throws with every problem: a request that did not fit, a step never reached, a script never used. */
  assertDone(): void {
    const found = [...this.player.unfinished(), ...this.server.problems];
    if (found.length > 0) throw new Error(found.join('\n'));
  }

  /** Forgets conversations and problems; the scripts stay. */
  reset(): void {
    this.player.reset();
  }

  /**
   * The scripts this test plays, in the order they are chosen (`use(paris)`, `use(clerk, manager)`):
   * they replace the model's scripts, and conversations and problems start clean (`reset`), so
   * `assertDone()` answers for these scripts only. One test at a time: tests that share a model take
   * turns (node:test and Vitest run a file's tests one after another unless told otherwise).
   */
  use(...scripts: Array<ModelScript | readonly ModelScript[]>): void {
    this.player.play(scriptList(scripts));
  }

  close(): Promise<void> {
    return this.server.close();
  }
}

/** Scripts given one by one, as lists, or both. */
function scriptList(scripts: ReadonlyArray<ModelScript | readonly ModelScript[]>): ModelScript[] {
  return scripts.flatMap((entry) =>
    Array.isArray(entry) ? [...(entry as readonly ModelScript[])] : [entry as ModelScript],
  );
}
