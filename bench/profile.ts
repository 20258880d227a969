/**
 * `npm run bench:profile`: where a worker's CPU goes per ReAct iteration, on the bench scenario of
 * `bench:peers` (one fast tool returning 4 KB per iteration, a fake model answering at once). One run of
 * `BENCH_ITERATIONS` (40) iterations on an in-process worker as it runs in production (activities on the
 * main thread, workflow activations on the SDK's workflow thread, the bundle the worker builds), both
 * threads profiled with V8's sampling profiler from the run's start to its end (the workflow thread
 * through the inspector's `NodeWorker` domain). Prints the CPU per iteration and the areas and functions
 * that took the most of it (self time) on each thread, so a change to the loop shows where it moved the
 * time. `BENCH_PROFILE_DIR` also writes the profiles, for Chrome's DevTools.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import type { Responder } from '../src/fake-model/server';
import { callTools, reply } from '../src/fake-model/steps';
import { table } from './report';
import { startBenchWorld } from './world';

const ITERATIONS = Number(process.env['BENCH_ITERATIONS'] ?? 40);
const TOP = Number(process.env['BENCH_TOP'] ?? 25);

const responder: Responder = (body) => {
  const done = body.messages.filter((message) => message['role'] === 'tool').length;
  if (done >= ITERATIONS) return reply('done');
  return callTools([{ id: `call_${done}`, name: 'repeat', arguments: '{"text": "abcdefghijklmnop", "times": 256}' }]);
};

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code lives: the workflow bundle, patchloop's sources, a package, or Node itself. */
function areaOf(url: string, name: string): string {
  if (url === '') return `(${name || 'native'})`;
  if (/workflow-bundle|webpack/.test(url)) return 'workflow bundle';
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (match) return match[1]!;
  if (url.startsWith('node:')) return 'node';
  const source = /\/(src\/[^/]+)\//.exec(url);
  return source ? source[1]! : url.replace(/^.*\//, '');
}

/** Self time (ms) by key. */
function selfTimes(profile: Profile, keyOf: (node: ProfileNode) => string): Map<string, number> {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const times = new Map<string, number>();
  profile.samples.forEach((id, index) => {
    const key = keyOf(nodes.get(id)!);
    times.set(key, (times.get(key) ?? 0) + (profile.timeDeltas[index] ?? 0) / 1000);
  });
  return times;
}

function top(times: Map<string, number>, total: number, count: number): string[][] {
  return [...times]
    .filter(([key]) => !['(idle)', '(program)', '((idle))', '((program))'].includes(key))
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([key, ms]) => [key, (ms / ITERATIONS).toFixed(2), `${((100 * ms) / total).toFixed(1)}%`]);
}

/** The workflow threads' inspector sessions, reached through the main thread's (`NodeWorker`). */
class WorkerThreads {
  private readonly sessions: string[] = [];
  private readonly pending = new Map<number, (result: unknown) => void>();
  private next = 1;
  constructor(private readonly session: Session) {
    session.on('NodeWorker.attachedToWorker', (message) => {
      this.sessions.push((message.params as { sessionId: string }).sessionId);
    });
    session.on('NodeWorker.receivedMessageFromWorker', (message) => {
      const reply = JSON.parse((message.params as { message: string }).message) as { id?: number; result?: unknown };
      if (reply.id !== undefined) this.pending.get(reply.id)?.(reply.result);
    });
  }

  async attach(): Promise<number> {
    await this.session.post('NodeWorker.enable', { waitForDebuggerOnStart: false });
    // The threads that exist already are reported at once, by events.
    await new Promise((resolve) => setTimeout(resolve, 200));
    return this.sessions.length;
  }

  /** Sends a command to every thread and waits for their answers. */
  all(method: string, params: object = {}): Promise<unknown[]> {
    return Promise.all(
      this.sessions.map(
        (sessionId) =>
          new Promise<unknown>((resolve) => {
            const id = this.next++;
            this.pending.set(id, resolve);
            void this.session.post('NodeWorker.sendMessageToWorker', {
              sessionId,
              message: JSON.stringify({ id, method, params }),
            });
          }),
      ),
    );
  }
}

/** The profile's JavaScript time (ms): everything but idle and the profiler's own. */
function busyMs(profile: Profile): number {
  const byName = selfTimes(profile, (node) => node.callFrame.functionName);
  return [...byName].filter(([name]) => name !== '(idle)' && name !== '(program)').reduce((sum, [, ms]) => sum + ms, 0);
}

function report(title: string, profile: Profile): void {
  const busy = busyMs(profile);
  console.log(`\n${title}: ${(busy / ITERATIONS).toFixed(2)} ms of JavaScript per iteration\n`);
  const byArea = selfTimes(profile, (node) => areaOf(node.callFrame.url, node.callFrame.functionName));
  console.log(table(['area', 'ms / iteration', 'share'], top(byArea, busy, 12)));
  console.log('');
  const byFunction = selfTimes(profile, (node) => {
    const { functionName, url, lineNumber } = node.callFrame;
    return url === ''
      ? `(${functionName})`
      : `${functionName || '(anonymous)'} ${areaOf(url, functionName)}:${lineNumber + 1}`;
  });
  console.log(table(['function (self time)', 'ms / iteration', 'share'], top(byFunction, busy, TOP)));
}

async function main() {
  const world = await startBenchWorld(responder, { keepBodies: false });
  const session = new Session();
  session.connect();
  const threads = new WorkerThreads(session);
  try {
    // A warm-up run first: module loading and the first bundle evaluation are not per iteration.
    await (await world.client.start({ agent: 'assistant', input: 'repeat' })).result();
    if ((await threads.attach()) === 0) throw new Error('no workflow thread to profile');
    for (const target of [
      (method: string, params?: object) => session.post(method as 'Profiler.enable', params as never),
      (method: string, params?: object) => threads.all(method, params),
    ]) {
      await target('Profiler.enable');
      await target('Profiler.setSamplingInterval', { interval: 200 });
    }
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await Promise.all([session.post('Profiler.start'), threads.all('Profiler.start')]);
    const result = await (await world.client.start({ agent: 'assistant', input: 'repeat' })).result();
    const [main, workflow] = await Promise.all([session.post('Profiler.stop'), threads.all('Profiler.stop')]);
    const wall = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    if (result.status !== 'completed') throw new Error(`the run ended ${result.status}`);
    console.log(
      `${ITERATIONS} iterations: ${(wall / ITERATIONS).toFixed(1)} ms wall and ` +
        `${((cpu.user + cpu.system) / 1000 / ITERATIONS).toFixed(1)} ms CPU per iteration (the whole process: ` +
        `both threads, the Rust core, gRPC)`,
    );
    const folder = process.env['BENCH_PROFILE_DIR'];
    if (folder) {
      // For Chrome's DevTools (Performance, Load profile) or any .cpuprofile reader.
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, 'main.cpuprofile'), JSON.stringify((main as { profile: Profile }).profile));
      for (const [index, answer] of workflow.entries())
        writeFileSync(
          join(folder, `workflow-${index + 1}.cpuprofile`),
          JSON.stringify((answer as { profile: Profile }).profile),
        );
      console.log(`profiles written to ${folder}`);
    }
    report('main thread (activities, the SDK, the client)', (main as { profile: Profile }).profile);
    for (const [index, answer] of workflow.entries())
      report(`workflow thread ${index + 1} (activations)`, (answer as { profile: Profile }).profile);
  } finally {
    session.disconnect();
    await world.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
