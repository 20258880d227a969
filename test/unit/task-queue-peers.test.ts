import { msNumberToTs } from '@temporalio/common/lib/time';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import {
  peersAmong,
  servedBy,
  servedFingerprint,
  sharedQueueNote,
  sharedQueueWarning,
  workerIdentity,
  type Served,
} from '../../src/worker/task-queue-peers';

const forecaster = { name: 'forecaster', instructions: 'Forecast.' };
const translator = { name: 'translator', instructions: 'Translate.' };
const self = `${process.pid}@${hostname()}`;

/** A poller as DescribeTaskQueue lists it, `secondsAgo` after its last poll. */
function poller(identity: string, secondsAgo = 2, deployment?: { deploymentName: string; buildId: string }) {
  return {
    identity,
    lastAccessTime: msNumberToTs(Date.now() - secondsAgo * 1000),
    ...(deployment ? { deploymentOptions: deployment } : {}),
  };
}

/** Another worker's identity: the same format, its own pid. */
function other(pid: number, served: Served): string {
  return workerIdentity(served).replace(/^\d+@/, `${pid}@`);
}

describe("a worker's identity", () => {
  it('says what it serves, and reads back; long lists and folders are cut short', () => {
    const served = {
      fingerprint: servedFingerprint([forecaster], []),
      folder: '/work/weather',
      agents: ['forecaster'],
    };
    const identity = workerIdentity(served);
    expect(identity).toBe(`${self} (patchloop ${served.fingerprint} in /work/weather; agents: forecaster)`);
    expect(servedBy(identity)).toEqual(served);
    expect(servedBy(`${self}`)).toBeUndefined();
    const many = Array.from({ length: 40 }, (_, index) => `agent-number-${index}`);
    const long = workerIdentity({ fingerprint: 'abcdef01', folder: `/${'deep/'.repeat(30)}project`, agents: many });
    expect(long.length).toBeLessThan(320);
    expect(servedBy(long)).toEqual({
      fingerprint: 'abcdef01',
      folder: `…${`/${'deep/'.repeat(30)}project`.slice(-80)}`,
      agents: [...many.slice(0, 10), '+30 more'],
    });
  });

  it("fingerprints the agents' definitions and the functions, whatever their order", () => {
    expect(servedFingerprint([forecaster, translator], ['summarize'])).toBe(
      servedFingerprint([translator, forecaster], ['summarize']),
    );
    expect(servedFingerprint([forecaster], [])).not.toBe(
      servedFingerprint([{ ...forecaster, instructions: 'Forecast, briefly.' }], []),
    );
    expect(servedFingerprint([forecaster], [])).not.toBe(servedFingerprint([forecaster], ['summarize']));
  });
});

describe('other workers on the task queue', () => {
  const mine = workerIdentity({
    fingerprint: servedFingerprint([translator], []),
    folder: '/work/translation',
    agents: ['translator'],
  });
  const weather = other(41, {
    fingerprint: servedFingerprint([forecaster], []),
    folder: '/work/weather',
    agents: ['forecaster'],
  });
  const replica = other(42, servedBy(mine)!);
  const earlier = other(43, { fingerprint: 'abcdef01', folder: '/work/translation', agents: ['old-translator'] });
  const self = { taskQueue: 'patchloop', identity: mine };

  it('are those that serve something else, in this worker’s deployment; replicas and this worker are not', () => {
    const versioned = poller(other(44, servedBy(weather)!), 1, { deploymentName: 'weather', buildId: 'b2' });
    const peers = peersAmong([poller(mine), poller(replica), poller(weather), poller('99@elsewhere'), versioned], {
      identity: mine,
    });
    expect(peers.map((peer) => peer.identity)).toEqual([weather, '99@elsewhere']);
  });

  it('warn at start, naming each with what it serves; its own earlier worker in its folder is left out', () => {
    const peers = peersAmong([poller(weather, 3), poller(earlier, 20), poller('99@elsewhere', 200)], {
      identity: mine,
    });
    expect(sharedQueueWarning(peers, self)).toBe(
      "task queue 'patchloop' is also polled by 41@" +
        `${hostname()} (in /work/weather; agents: forecaster), 99@elsewhere (which does not say what it serves; no poll for 200 s: it may have stopped): ` +
        "runs of either worker's agents may go to the other and fail there (UnknownAgent) or run with its tools and model; " +
        'give each project its own task queue (PATCHLOOP_TASK_QUEUE, or worker --task-queue)',
    );
    expect(
      sharedQueueWarning(peersAmong([poller(earlier), poller(replica)], { identity: mine }), self),
    ).toBeUndefined();
  });

  it('explain a run of an agent this worker does not serve: the workers that serve it, or all of them, at most three', () => {
    const peers = peersAmong([poller(weather, 3), poller(earlier, 20)], { identity: mine });
    expect(sharedQueueNote(peers, self, 'forecaster')).toBe(
      `this worker (${process.pid}@${hostname()}) shares task queue 'patchloop' with 41@${hostname()} (in /work/weather; agents: forecaster), which serve(s) 'forecaster': give each project its own task queue (PATCHLOOP_TASK_QUEUE, or worker --task-queue)`,
    );
    const crowd = peersAmong(
      [1, 2, 3, 4, 5].map((pid) => poller(`${pid}@elsewhere`, 1)),
      { identity: mine },
    );
    expect(sharedQueueNote(crowd, self, 'ghost')).toBe(
      `this worker (${process.pid}@${hostname()}) shares task queue 'patchloop' with 1@elsewhere (which does not say what it serves), 2@elsewhere (which does not say what it serves), 3@elsewhere (which does not say what it serves) and 2 more: if the run was meant for another project's worker, give each project its own task queue (PATCHLOOP_TASK_QUEUE, or worker --task-queue)`,
    );
    expect(sharedQueueNote([], self, 'ghost')).toBeUndefined();
  });
});
