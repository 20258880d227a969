import type { ChunkTransport, StreamEvent, StreamOffset } from './chunk';

interface CallBuffer {
  attempt: number;
  events: StreamEvent[];
}

interface RunBuffer {
  calls: Map<number, CallBuffer>;
  touched: number;
}

/**
 * The in-process chunk transport: keeps the chunks of each run's recent LLM calls (so a follower that
 * connects mid-call gets the whole prefix) and wakes subscribers on new chunks. Bounded: a run keeps its
 * last `callsPerRun` calls, and runs idle for `idleMs` are dropped. A subscriber waiting for a run that
 * has published nothing allocates no buffer: only its wake-up callback, removed when it leaves.
 */
export class ChunkHub implements ChunkTransport {
  private readonly runs = new Map<string, RunBuffer>();
  private readonly listeners = new Map<string, Set<() => void>>();

  constructor(
    private readonly callsPerRun = 4,
    private readonly idleMs = 10 * 60 * 1000,
  ) {}

  publish(event: StreamEvent): void {
    let run = this.runs.get(event.run_id);
    if (!run) {
      run = { calls: new Map(), touched: Date.now() };
      this.runs.set(event.run_id, run);
    }
    run.touched = Date.now();
    const existing = run.calls.get(event.llm_call);
    if (existing && existing.attempt > event.attempt) return;
    // A new attempt replaces the earlier attempt's chunks: followers start that call again.
    const call = existing && existing.attempt === event.attempt ? existing : { attempt: event.attempt, events: [] };
    run.calls.set(event.llm_call, call);
    call.events.push(event);
    while (run.calls.size > this.callsPerRun) run.calls.delete(Math.min(...run.calls.keys()));
    for (const wake of [...(this.listeners.get(event.run_id) ?? [])]) wake();
    this.sweep();
  }

  /**
   * Events from the offset on, live, until aborted or the run has been silent for `idleMs`. Chunk i of
   * an attempt sits at position i of its buffer and the end marker after the last chunk. After a
   * `failed` end that is `retrying`, the same call is read again once a newer attempt streams it.
   */
  async *subscribe(runId: string, from: StreamOffset, signal: AbortSignal): AsyncIterable<StreamEvent> {
    let call = from.llm_call;
    // The attempt the position belongs to (undefined: whichever attempt is there now).
    let attempt = from.attempt;
    let position = from.chunk_index;
    while (!signal.aborted) {
      const run = this.runs.get(runId);
      const buffer = run?.calls.get(call);
      if (buffer && attempt !== undefined && buffer.attempt > attempt) {
        // A retry replaced the attempt this offset belongs to: read the new one from its start.
        attempt = buffer.attempt;
        position = 0;
      }
      if (buffer && attempt === undefined) attempt = buffer.attempt;
      if (buffer && buffer.attempt === attempt && position < buffer.events.length) {
        const event = buffer.events[position]!;
        position += 1;
        yield event;
        if (event.event_type === 'llm_stream_end') {
          if (event.outcome === 'failed' && event.retrying !== false) {
            attempt = event.attempt + 1;
          } else {
            call += 1;
            attempt = undefined;
          }
          position = 0;
        }
        continue;
      }
      // A later call already started (this one was evicted, never streamed here, or its retry runs on
      // another worker): move on to it.
      const later = run ? [...run.calls.keys()].filter((key) => key > call) : [];
      if ((!buffer || (attempt !== undefined && buffer.attempt < attempt)) && later.length > 0) {
        call = Math.min(...later);
        attempt = undefined;
        position = 0;
        continue;
      }
      if (!(await this.nextPublish(runId, signal))) return;
    }
  }

  /** False when nothing was published for the run within `idleMs`: the follower is let go. */
  private nextPublish(runId: string, signal: AbortSignal): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const idle = setTimeout(() => finish(false), this.idleMs);
      const finish = (published: boolean) => {
        clearTimeout(idle);
        wake(published);
      };
      let waiting = this.listeners.get(runId);
      if (!waiting) {
        waiting = new Set();
        this.listeners.set(runId, waiting);
      }
      const set = waiting;
      const onPublish = () => finish(true);
      const wake = (published: boolean) => {
        set.delete(onPublish);
        if (set.size === 0 && this.listeners.get(runId) === set) this.listeners.delete(runId);
        signal.removeEventListener('abort', onPublish);
        resolve(published);
      };
      set.add(onPublish);
      signal.addEventListener('abort', onPublish, { once: true });
    });
  }

  /** Runs and listener sets held (for tests: unknown run ids must not leave anything behind). */
  get size(): { runs: number; listeners: number } {
    return { runs: this.runs.size, listeners: this.listeners.size };
  }

  private sweep(): void {
    const cutoff = Date.now() - this.idleMs;
    for (const [id, run] of this.runs) if (run.touched < cutoff && !this.listeners.has(id)) this.runs.delete(id);
  }
}
