import type { ChunkTransport, StreamEvent, StreamOffset } from './chunk';

interface CallBuffer {
  attempt: number;
  events: StreamEvent[];
  ended: boolean;
}

interface RunBuffer {
  calls: Map<number, CallBuffer>;
  listeners: Set<() => void>;
  touched: number;
}

/**
 * The in-process chunk transport: keeps the chunks of each run's recent LLM calls (so a follower that
 * connects mid-call gets the whole prefix) and wakes subscribers on new chunks. Bounded: a run keeps its
 * last `callsPerRun` calls, and runs idle for `idleMs` are dropped.
 */
export class ChunkHub implements ChunkTransport {
  private readonly runs = new Map<string, RunBuffer>();

  constructor(
    private readonly callsPerRun = 4,
    private readonly idleMs = 10 * 60 * 1000,
  ) {}

  publish(event: StreamEvent): void {
    const run = this.run(event.run_id);
    const existing = run.calls.get(event.llm_call);
    // A new attempt replaces the earlier attempt's chunks: followers start that call again.
    const call = existing && existing.attempt === event.attempt ? existing : { attempt: event.attempt, events: [], ended: false };
    if (existing && existing.attempt > event.attempt) return;
    run.calls.set(event.llm_call, call);
    call.events.push(event);
    if (event.event_type === 'llm_stream_end') call.ended = true;
    while (run.calls.size > this.callsPerRun) run.calls.delete(Math.min(...run.calls.keys()));
    for (const wake of [...run.listeners]) wake();
    this.sweep();
  }

  async *subscribe(runId: string, from: StreamOffset, signal: AbortSignal): AsyncIterable<StreamEvent> {
    const run = this.run(runId);
    let call = from.llm_call;
    let index = from.chunk_index;
    let attempt = -1;
    // Chunk i of an attempt sits at position i of its buffer, and the end marker after the last chunk.
    let position = index;
    while (!signal.aborted) {
      const buffer = run.calls.get(call);
      if (buffer && buffer.attempt !== attempt) {
        // First look at this call, or a retry restarted it: read it from the offset (a retry from 0).
        if (attempt !== -1) index = 0;
        attempt = buffer.attempt;
        position = index;
      }
      if (buffer && position < buffer.events.length) {
        const event = buffer.events[position]!;
        position += 1;
        yield event;
        if (event.event_type === 'llm_stream_end') {
          call += 1;
          index = 0;
          attempt = -1;
        }
        continue;
      }
      // A later call already started (this one was evicted or never streamed): move on to it.
      const later = [...run.calls.keys()].filter((key) => key > call);
      if (!buffer && later.length > 0) {
        call = Math.min(...later);
        index = 0;
        continue;
      }
      await this.nextPublish(run, signal);
    }
  }

  private nextPublish(run: RunBuffer, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        run.listeners.delete(wake);
        signal.removeEventListener('abort', wake);
        resolve();
      };
      run.listeners.add(wake);
      signal.addEventListener('abort', wake, { once: true });
    });
  }

  private run(runId: string): RunBuffer {
    let run = this.runs.get(runId);
    if (!run) {
      run = { calls: new Map(), listeners: new Set(), touched: Date.now() };
      this.runs.set(runId, run);
    }
    run.touched = Date.now();
    return run;
  }

  private sweep(): void {
    const cutoff = Date.now() - this.idleMs;
    for (const [id, run] of this.runs) if (run.touched < cutoff && run.listeners.size === 0) this.runs.delete(id);
  }
}
