import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One side effect a tool performed (an email sent, a card charged), as the outside world saw it. */
export interface SideEffect {
  label: string;
  key: string;
  /** The worker process that performed it (PATCHLOOP_TEST_WORKER_NAME). */
  worker: string;
  /** `start` when the call began its side effect, `end` when it finished. */
  phase: 'start' | 'end';
  at: number;
  /** The MCP tool that performed it (support/python_mcp_server.py); absent for registered tools. */
  tool?: string;
}

/** Calls that started more than once (calls in flight at a kill may; finished ones: finishedRepeats). */
export function restartedCalls(effects: readonly SideEffect[]): number {
  const starts = new Map<string, number>();
  for (const effect of effects) if (effect.phase === 'start') starts.set(effect.key, (starts.get(effect.key) ?? 0) + 1);
  return [...starts.values()].filter((times) => times > 1).length;
}

/** A worker process stopped by the test (SIGKILL or SIGTERM): when the signal was sent, and when it exited. */
export interface WorkerDeath {
  worker: string;
  at: number;
  /** Unknown (the signal's time is taken) until the process has exited. */
  exited?: number;
}

/** A time the Temporal server could not be reached (from its stop to its being healthy again). */
export interface ServerOutage {
  from: number;
  to: number;
}

/**
 * Finished calls that ran again, split by cause; each cause is one of README's "what can run twice",
 * with the same idempotency key:
 * - `inWindow`: the call finished less than `windowMs` before its worker was stopped: its checkpoint
 *   leaves the worker within the heartbeat throttle (0.25 s) of its end, and the kill beat it; or it
 *   finished after the signal, before the worker exited: it was in flight at the stop, and its result
 *   came after the batch stopped waiting for it (a SIGTERM's grace is 0.2 s; within it, it is kept);
 * - `inOutage`: the call finished while the server was down, or within `heartbeatTimeoutMs` after it
 *   came back (or `windowMs` before it went), in an outage that outlasted the heartbeat timeout (less
 *   the `windowMs` a checkpoint may wait in the worker): its checkpoint could not be recorded, and the
 *   server times the attempt out on its return, so the retry does not see it.
 * Any other repeat (`outside`) is a finished call the checkpoint failed to keep.
 */
export function finishedRepeats(
  effects: readonly SideEffect[],
  deaths: readonly WorkerDeath[],
  windowMs: number,
  outages: readonly ServerOutage[] = [],
  heartbeatTimeoutMs = 0,
): { inWindow: number; inOutage: number; outside: number } {
  const ends = new Map<string, SideEffect[]>();
  for (const effect of effects)
    if (effect.phase === 'end') ends.set(effect.key, [...(ends.get(effect.key) ?? []), effect]);
  let inWindow = 0;
  let inOutage = 0;
  let outside = 0;
  for (const [, [first, ...again]] of ends) {
    if (!first || again.length === 0) continue;
    const stoppedSoonAfter = deaths.some(
      (death) =>
        death.worker === first.worker && first.at >= death.at - windowMs && first.at <= (death.exited ?? death.at),
    );
    const duringOutage = outages.some(
      (outage) =>
        outage.to - outage.from + windowMs >= heartbeatTimeoutMs &&
        first.at >= outage.from - windowMs &&
        first.at <= outage.to + heartbeatTimeoutMs,
    );
    if (stoppedSoonAfter) inWindow += 1;
    else if (duringOutage) inOutage += 1;
    else outside += 1;
  }
  return { inWindow, inOutage, outside };
}

/**
 * A service outside the worker that tools call to perform side effects, so a test counts what really
 * happened across worker crashes: `POST /effect {label, key, worker, phase, tool?}` records one (`tool`
 * names an MCP server's tool); `POST /attempt {key}` counts
 * attempts of one call and answers how many so far.
 */
export async function startSideEffectServer(): Promise<{
  url: string;
  effects: SideEffect[];
  attempts: Map<string, number>;
  close(): Promise<void>;
}> {
  const effects: SideEffect[] = [];
  const attempts = new Map<string, number>();
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (part: Buffer) => (body += part.toString()));
    request.on('end', () => {
      const parsed = JSON.parse(body || '{}') as {
        label?: string;
        key?: string;
        worker?: string;
        phase?: string;
        tool?: string;
      };
      if (request.url === '/effect') {
        effects.push({
          label: String(parsed.label),
          key: String(parsed.key),
          worker: String(parsed.worker),
          phase: parsed.phase === 'end' ? 'end' : 'start',
          at: Date.now(),
          ...(typeof parsed.tool === 'string' ? { tool: parsed.tool } : {}),
        });
        response.end('{}');
        return;
      }
      if (request.url === '/attempt') {
        const count = (attempts.get(String(parsed.key)) ?? 0) + 1;
        attempts.set(String(parsed.key), count);
        response.end(JSON.stringify({ attempt: count }));
        return;
      }
      response.statusCode = 404;
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    effects,
    attempts,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
