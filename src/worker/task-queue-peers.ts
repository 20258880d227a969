import { optionalTsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import type { NativeConnection } from '@temporalio/worker';
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { WorkerDeployment } from '../config/environment';

/**
 * Workers of different projects on one task queue take each other's runs: a run of one project's
 * agent that another's worker takes fails there (UnknownAgent), or runs with that worker's tools and
 * provider. A worker's Temporal identity therefore says what it serves (`1234@host (patchloop
 * 3fa2c1d0 in /home/me/weather; agents: forecaster)`: a fingerprint of its agents and functions, its
 * folder, its agents' names), and the queue's pollers, which Temporal lists with their identities, tell
 * a worker which others share its queue and what they serve.
 */

/** What a worker serves, as its identity tells it. */
export interface Served {
  /** A hash of the agent definitions and function names: workers of one project (replicas) share it. */
  fingerprint: string;
  folder: string;
  /** The agents' names; the list ends with `+N more` when it was too long to tell whole. */
  agents: string[];
}

/** Another worker polling the queue, as Temporal lists it. */
export interface Peer {
  identity: string;
  /** Absent when its identity does not say (not a patchloop worker, or an older one). */
  served?: Served;
  /** When its latest poll for a task began: a worker that stopped stays listed for a few minutes. */
  lastPolledMs?: number;
}

/** Agent names an identity lists before it cuts the list short. */
const IDENTITY_NAMES_CHARS = 160;
/** The end of the folder an identity keeps. */
const IDENTITY_FOLDER_CHARS = 80;
/** Other workers a message names before it counts the rest. */
const NAMED_PEERS = 3;

const IDENTITY = /^(\S+) \(patchloop ([0-9a-f]{8}) in (.*); agents: (.*)\)$/;

/** The fingerprint of what a worker serves: equal for workers of one project and build. */
export function servedFingerprint(agents: readonly unknown[], functions: readonly string[]): string {
  const sorted = [...agents].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  return createHash('sha256')
    .update(JSON.stringify({ agents: sorted, functions: [...functions].sort() }))
    .digest('hex')
    .slice(0, 8);
}

/** The worker's Temporal identity: Temporal's own (`pid@host`), then what it serves. */
export function workerIdentity(served: Served): string {
  const folder =
    served.folder.length > IDENTITY_FOLDER_CHARS ? `…${served.folder.slice(-IDENTITY_FOLDER_CHARS)}` : served.folder;
  const names: string[] = [];
  for (const [index, name] of served.agents.entries()) {
    if ([...names, name].join(', ').length > IDENTITY_NAMES_CHARS) {
      names.push(`+${served.agents.length - index} more`);
      break;
    }
    names.push(name);
  }
  return `${process.pid}@${hostname()} (patchloop ${served.fingerprint} in ${folder}; agents: ${names.join(', ')})`;
}

/** What an identity says its worker serves, if it is a patchloop worker's. */
export function servedBy(identity: string): Served | undefined {
  const match = IDENTITY.exec(identity);
  if (!match) return undefined;
  return { fingerprint: match[2]!, folder: match[3]!, agents: match[4] === '' ? [] : match[4]!.split(', ') };
}

/** The worker's identity without what it serves: `pid@host`. */
function shortIdentity(identity: string): string {
  return IDENTITY.exec(identity)?.[1] ?? identity;
}

/** Whom a worker asks about: its namespace, queue, identity and deployment. */
export interface PeerQuery {
  namespace: string;
  taskQueue: string;
  identity: string;
  deployment?: WorkerDeployment | undefined;
}

/** The other workers polling the query's task queue for workflow tasks (`peersAmong` of its pollers). */
export async function queuePeers(connection: NativeConnection, query: PeerQuery): Promise<Peer[]> {
  const { pollers } = await connection.workflowService.describeTaskQueue({
    namespace: query.namespace,
    taskQueue: { name: query.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  return peersAmong(pollers ?? [], query);
}

/**
 * Of a queue's pollers, those that serve something else than this worker (another fingerprint, or an
 * identity that does not say), in its deployment and build (workers of other builds are Worker
 * Versioning's to route). This worker and its replicas are left out.
 */
export function peersAmong(
  pollers: readonly temporal.api.taskqueue.v1.IPollerInfo[],
  query: Pick<PeerQuery, 'identity' | 'deployment'>,
): Peer[] {
  const own = servedBy(query.identity);
  return pollers
    .filter((poller) => {
      const theirs = poller.deploymentOptions;
      return (
        (theirs?.deploymentName || undefined) === query.deployment?.name &&
        (theirs?.buildId || undefined) === query.deployment?.buildId
      );
    })
    .map((poller) => {
      const identity = poller.identity ?? '';
      const served = servedBy(identity);
      const lastPolledMs = optionalTsToMs(poller.lastAccessTime);
      return { identity, ...(served ? { served } : {}), ...(lastPolledMs !== undefined ? { lastPolledMs } : {}) };
    })
    .filter((peer) => peer.identity !== query.identity && peer.served?.fingerprint !== own?.fingerprint);
}

/**
 * A poll waits up to a minute for a task, and Temporal notes when it began: a worker that has not polled
 * for longer has most likely stopped (the server lists it for a few minutes more).
 */
const POLL_SECONDS = 90;

/** A peer in a message: its `pid@host`, folder and agents, and whether it may have stopped. */
function describePeer(peer: Peer, now: number): string {
  const idleSeconds = peer.lastPolledMs === undefined ? 0 : Math.round((now - peer.lastPolledMs) / 1000);
  const polled = idleSeconds > POLL_SECONDS ? `no poll for ${idleSeconds} s: it may have stopped` : '';
  const details = peer.served
    ? [`in ${peer.served.folder}`, `agents: ${peer.served.agents.join(', ') || 'none'}`, polled]
    : ['which does not say what it serves', polled];
  return `${shortIdentity(peer.identity)} (${details.filter((part) => part !== '').join('; ')})`;
}

function describePeers(peers: readonly Peer[], now: number): string {
  const named = peers.slice(0, NAMED_PEERS).map((peer) => describePeer(peer, now));
  const more = peers.length - named.length;
  return `${named.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
}

const FIX = 'give each project its own task queue (PATCHLOOP_TASK_QUEUE, or worker --task-queue)';

/**
 * What a worker says at start when others serving something else poll its task queue: which, and the
 * fix. Workers in this worker's folder are left out (its own earlier run, with agents since edited, is
 * listed for minutes after it stopped); the failure of a run they took names them.
 */
export function sharedQueueWarning(
  peers: readonly Peer[],
  self: { taskQueue: string; identity: string },
  now = Date.now(),
): string | undefined {
  const folder = servedBy(self.identity)?.folder;
  const others = peers.filter((peer) => peer.served === undefined || peer.served.folder !== folder);
  if (others.length === 0) return undefined;
  return (
    `task queue '${self.taskQueue}' is also polled by ${describePeers(others, now)}: ` +
    `runs of either worker's agents may go to the other and fail there (UnknownAgent) or run with its tools and model; ${FIX}`
  );
}

/**
 * What the failure of a run of an agent this worker does not serve adds when others poll its queue:
 * them, which of them serve the agent, and the fix.
 */
export function sharedQueueNote(
  peers: readonly Peer[],
  self: { taskQueue: string; identity: string },
  agent: string,
  now = Date.now(),
): string | undefined {
  if (peers.length === 0) return undefined;
  const serving = peers.filter((peer) => peer.served?.agents.includes(agent));
  const shared = `this worker (${shortIdentity(self.identity)}) shares task queue '${self.taskQueue}' with ${describePeers(serving.length > 0 ? serving : peers, now)}`;
  return serving.length > 0
    ? `${shared}, which serve(s) '${agent}': ${FIX}`
    : `${shared}: if the run was meant for another project's worker, ${FIX}`;
}
