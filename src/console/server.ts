import { WorkflowNotFoundError } from '@temporalio/client';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { followRunEvents } from '../client/follow';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ApprovalRefusedError,
  ForkRefusedError,
  recordedTranscript,
  type PatchloopClient,
  type RunHandle,
} from '../client/patchloop-client';
import { askingWorker, workerCommandFor, workerWaitOf, WORKER_WAIT_NOTICE_MS } from '../client/worker-wait';
import { BudgetExtension, forkUnitOf, PRINCIPAL_NAME, type RunEvent, type TokenPrices } from '../runtime';
import {
  AccessRefused,
  checkAction,
  checkRead,
  checkSameOrigin,
  credentialOf,
  SESSION_COOKIE,
  sessionValue,
  tokenMatches,
  type ConsoleAccess,
} from './access';
import {
  approvals,
  isRunning,
  messagePage,
  overview,
  runListPage,
  runPage,
  runRows,
  signInPage,
  stateBadge,
  timelinePanel,
  timelineRows,
  transcript,
  childrenPanel,
  extendForm,
  type ListFilters,
  type PageContext,
  type RunView,
} from './pages';
import {
  childTree,
  ClosedRuns,
  describedRun,
  failureOf,
  readRunView,
  readTranscript,
  RunNotFound,
  withStartedChildren,
} from './views';

export interface ConsoleOptions {
  client: PatchloopClient;
  host: string;
  port: number;
  access: ConsoleAccess;
  /** The Temporal web UI's page of a workflow, or null when its address is unknown. */
  temporalLink(workflowId: string): string | null;
  /** The states the list filters on. */
  states: readonly string[];
  log?: (line: string) => void;
}

export interface ConsoleServer {
  url: string;
  close(): Promise<void>;
}

/** The most an action's JSON body may hold. */
const MAX_BODY_BYTES = 64 * 1024;
/** How often the live feed refreshes a run's panels at most (the events themselves go at once). */
const REFRESH_MS = 300;
/** And at least, while nothing happens (a query that failed once, durations, children's states). */
const QUIET_REFRESH_MS = 3000;

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: https: http:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
};

/**
 * `patchloop console`: the run list (`/`), a run (`/runs/<workflow id>`) with its live feed over SSE
 * (`/runs/<id>/live`), and the actions (`POST /api/runs/<id>/{approve,reject,abort,message,extend-budget,fork}`),
 * all through the client: what the page shows and does is what the CLI and the client do.
 */
export async function startConsole(options: ConsoleOptions): Promise<ConsoleServer> {
  const assets = loadAssets();
  const feeds = new Map<AbortController, Promise<void>>();
  const closedRuns = new ClosedRuns();
  const server: Server = createServer((request, response) => {
    handle(request, response, { options, assets, feeds, closedRuns }).catch((error: unknown) => {
      options.log?.(`console: ${request.method} ${request.url}: ${(error as Error).message}`);
      if (response.headersSent) response.destroy();
      else send(response, 500, 'text/plain; charset=utf-8', 'the console failed to answer; see its log');
    });
  });
  server.on('clientError', (_error, socket: Socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    else socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shown = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${shown === '0.0.0.0' || shown === '[::]' ? '127.0.0.1' : shown}:${port}`,
    close: async () => {
      for (const feed of feeds.keys()) feed.abort();
      // Their queries finish before the caller closes the client they use.
      await Promise.all(feeds.values());
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type Assets = Record<string, { type: string; body: Buffer }>;

/**
 * The page's script and style sheet: beside this module when it runs from the sources, and from
 * `src/console/assets` when it runs compiled (`dist/src/console`; the package ships that folder).
 */
function loadAssets(): Assets {
  const folder = [join(__dirname, 'assets'), join(__dirname, '..', '..', '..', 'src', 'console', 'assets')].find(
    (candidate) => existsSync(join(candidate, 'console.js')),
  );
  if (!folder) throw new Error('the console assets (src/console/assets) are missing from this installation');
  return {
    '/assets/console.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(join(folder, 'console.js')) },
    '/assets/console.css': { type: 'text/css; charset=utf-8', body: readFileSync(join(folder, 'console.css')) },
  };
}

function send(response: ServerResponse, status: number, type: string, body: string | Buffer, headers = {}): void {
  response.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, ...headers }).end(body);
}

function sendJson(response: ServerResponse, status: number, value: unknown): void {
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(value));
}

function html(response: ServerResponse, status: number, page: string, headers = {}): void {
  send(response, status, 'text/html; charset=utf-8', page, headers);
}

/** What the console's requests share: its options, assets, the live feeds open and the runs known to have ended. */
interface ConsoleState {
  options: ConsoleOptions;
  assets: Assets;
  feeds: Map<AbortController, Promise<void>>;
  closedRuns: ClosedRuns;
}

async function handle(
  request: IncomingMessage,
  response: ServerResponse,
  { options, assets, feeds, closedRuns }: ConsoleState,
): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://console.invalid');
  const path = url.pathname;
  try {
    if (path === '/login') return await login(request, response, url, options);
    if (path.startsWith('/api/')) {
      checkAction(request, options.access);
      return await action(request, response, path, options);
    }
    if (request.method !== 'GET' && request.method !== 'HEAD')
      throw new AccessRefused(405, `${request.method} is not served here`);
    checkRead(request, options.access);
  } catch (error) {
    if (!(error instanceof AccessRefused)) throw error;
    if (path.startsWith('/api/') || request.headers.accept?.includes('application/json'))
      return sendJson(response, error.status, { error: { type: 'AccessRefused', message: error.message } });
    return html(
      response,
      error.status,
      error.status === 401 ? signInPage(error.message) : messagePage('Refused', error.message),
    );
  }
  const asset = assets[path];
  if (asset) return send(response, 200, asset.type, asset.body, { 'cache-control': 'no-cache' });
  const context: PageContext = {
    temporalLink: options.temporalLink,
    signedIn: credentialOf(request, options.access) !== null,
    taskQueue: options.client.taskQueue,
  };
  if (path === '/' || path === '/fragments/runs') {
    const filters: ListFilters = {
      agent: url.searchParams.get('agent')?.trim() ?? '',
      principal: url.searchParams.get('principal')?.trim() ?? '',
      state: url.searchParams.get('state')?.trim() ?? '',
      q: url.searchParams.get('q')?.trim() ?? '',
    };
    // A name no principal can have finds no run (and never reaches the query).
    const runs =
      filters.principal && !PRINCIPAL_NAME.test(filters.principal)
        ? []
        : await options.client.listRuns({
            limit: 200,
            ...(filters.agent ? { agent: filters.agent } : {}),
            ...(filters.principal ? { principal: filters.principal } : {}),
            ...(filters.state && options.states.includes(filters.state) ? { status: filters.state } : {}),
            ...(filters.q ? { text: filters.q } : {}),
          });
    return path === '/'
      ? html(response, 200, runListPage(runs, filters, options.states, context, Date.now()))
      : html(response, 200, runRows(runs, context, Date.now()));
  }
  const live = /^\/runs\/([^/]+)\/live$/.exec(path);
  if (live) {
    const stop = new AbortController();
    const workflowId = decodeURIComponent(live[1]!);
    const feed = liveFeed(request, response, { options, workflowId, url, context, stop });
    feeds.set(stop, feed);
    return feed.finally(() => feeds.delete(stop));
  }
  const run = /^\/runs\/([^/]+)(\/details)?$/.exec(path);
  if (run) {
    const allEvents = url.searchParams.get('events') === 'all';
    try {
      // A closed run's page comes at once from its description and result; its details (each query
      // replays its history) follow by script, or here with `?details=now`.
      const replay = run[2] !== undefined || url.searchParams.get('details') === 'now';
      const view = await readRunView(options.client, decodeURIComponent(run[1]!), closedRuns, { replay, allEvents });
      if (run[2] === undefined) return html(response, 200, runPage(view, context, Date.now(), allEvents));
      return sendJson(response, 200, {
        state: stateBadge(view),
        overview: overview(view, Date.now(), context),
        // The page has a transcript its result records already: it is not sent twice.
        ...(recordedTranscript(view.result) ? {} : { transcript: transcript(view.transcript) }),
        timeline: timelinePanel(view, allEvents),
        children: childrenPanel(view),
      });
    } catch (error) {
      if (error instanceof RunNotFound) {
        if (run[2] !== undefined)
          return sendJson(response, 404, { error: { type: 'NotFound', message: error.message } });
        return html(response, 404, messagePage('Not found', error.message));
      }
      throw error;
    }
  }
  return html(response, 404, messagePage('Not found', `nothing at ${path}`));
}

/** `GET /login?token=…` (the link `patchloop console` prints) or the sign-in form's POST: sets the session cookie. */
async function login(
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
  options: ConsoleOptions,
): Promise<void> {
  const access = options.access;
  if (access.loopbackBind && !request.headers.host?.match(/^(localhost|127\.[\d.]+|\[::1\])(:\d+)?$/))
    throw new AccessRefused(421, `this console answers only to localhost, not to '${request.headers.host ?? ''}'`);
  let token: string | null = null;
  if (request.method === 'POST') {
    checkSameOrigin(request, null);
    token = new URLSearchParams((await readBody(request)).toString('utf8')).get('token');
  } else if (request.method === 'GET') token = url.searchParams.get('token');
  else throw new AccessRefused(405, 'sign in with GET /login?token=… or the form');
  if (token === null) return html(response, 200, signInPage());
  if (!tokenMatches(token, access)) return html(response, 401, signInPage('That is not the console token.'));
  return send(response, 303, 'text/plain; charset=utf-8', 'signed in', {
    location: '/',
    'set-cookie': `${SESSION_COOKIE}=${sessionValue(access.token)}; HttpOnly; SameSite=Strict; Path=/`,
  });
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of request as AsyncIterable<Buffer>) {
    size += part.length;
    if (size > MAX_BODY_BYTES) throw new ActionError(413, 'TooLarge', `the body passes ${MAX_BODY_BYTES} bytes`);
    parts.push(part);
  }
  return Buffer.concat(parts);
}

class ActionError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/** The actions, each a call of the client (the same the CLI's approve, reject, abort, send and budget make). */
async function action(
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
  options: ConsoleOptions,
): Promise<void> {
  const match = /^\/api\/runs\/([^/]+)\/(approve|reject|abort|message|extend-budget|fork)$/.exec(path);
  try {
    if (!match) throw new ActionError(404, 'NotFound', `no action at ${path}`);
    let body: Record<string, unknown>;
    try {
      const parsed = JSON.parse((await readBody(request)).toString('utf8') || '{}') as unknown;
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      body = parsed as Record<string, unknown>;
    } catch (error) {
      if (error instanceof ActionError) throw error;
      throw new ActionError(400, 'BadRequest', 'the body must be a JSON object');
    }
    const run = options.client.run(decodeURIComponent(match[1]!));
    const text = (name: string, required = false): string | undefined => {
      const value = body[name];
      if (value === undefined || value === null || value === '') {
        if (required) throw new ActionError(400, 'BadRequest', `'${name}' is required`);
        return undefined;
      }
      if (typeof value !== 'string') throw new ActionError(400, 'BadRequest', `'${name}' must be a string`);
      return value;
    };
    // An update a worker applies: answered as it answers, or, with no worker after a few seconds, 202.
    const applied = (update: () => Promise<unknown>) => untilApplied(response, run, update, options);
    switch (match[2]) {
      case 'approve':
        return await applied(() => run.approve(text('tool_call_id', true)!, text('reason'), text('run')));
      case 'reject':
        return await applied(() =>
          run.reject(text('tool_call_id', true)!, text('reason') ?? 'rejected in the console', text('run')),
        );
      case 'abort':
        await run.abort(text('reason') ?? 'aborted in the console');
        return sendJson(response, 200, { workflow_id: run.workflowId, signal: 'abort' });
      case 'message':
        return await applied(() => run.submit(text('content', true)!));
      case 'fork': {
        const at = body['at'];
        if (typeof at !== 'number' || !Number.isInteger(at) || at < 0)
          throw new ActionError(
            400,
            'BadRequest',
            "'at' must be an iteration, or a session's turn (a whole number, 0 or more)",
          );
        const fork = await options.client.fork(run.workflowId, { at });
        return sendJson(response, 200, {
          workflow_id: fork.workflowId,
          forked_from: { workflow_id: run.workflowId, at },
        });
      }
      default: {
        const extension = BudgetExtension.safeParse(
          Object.fromEntries(Object.entries(body).filter(([, value]) => value !== null && value !== '')),
        );
        if (!extension.success)
          throw new ActionError(400, 'BadRequest', extension.error.issues.map((issue) => issue.message).join('; '));
        return await applied(async () => ({ limit: await run.extendBudget(extension.data) }));
      }
    }
  } catch (error) {
    if (error instanceof ActionError)
      return sendJson(response, error.status, { error: { type: error.type, message: error.message } });
    if (error instanceof WorkflowNotFoundError)
      return sendJson(response, 404, { error: { type: 'NotFound', message: 'no such run' } });
    // What the run refused (an id that does not wait, a run that ended): its own words.
    const refused =
      error instanceof ApprovalRefusedError ||
      error instanceof ForkRefusedError ||
      (error as Error).name === 'WorkflowUpdateFailedError';
    const message = (error as { cause?: Error }).cause?.message ?? (error as Error).message;
    return sendJson(response, refused ? 409 : 502, {
      error: { type: refused ? 'Refused' : 'Failed', message: refused ? message : (error as Error).message },
    });
  }
}

/**
 * Answers an action's update: with what the run answered, or, when no worker has applied it within
 * `WORKER_WAIT_NOTICE_MS` (an update the console sends is applied in well under a second by a worker
 * that takes it), with 202 and a message saying so and what to start. The update goes on meanwhile
 * (the console keeps waiting for it, and logs how it ended), and the page shows its effect once a
 * worker applies it. A failure within the wait is the action's failure.
 */
async function untilApplied(
  response: ServerResponse,
  run: RunHandle,
  update: () => Promise<unknown>,
  options: ConsoleOptions,
): Promise<void> {
  const pending = update();
  const waited = Symbol('waited');
  const first = await Promise.race([pending, sleep(WORKER_WAIT_NOTICE_MS).then(() => waited)]);
  if (first !== waited) return sendJson(response, 200, first);
  pending.then(
    () => options.log?.(`console: an action on ${run.workflowId} was applied once a worker took it`),
    (error: unknown) =>
      options.log?.(
        `console: an action on ${run.workflowId} failed once a worker took it: ${(error as Error).message}`,
      ),
  );
  const description = await run.workflow.describe().catch(() => undefined);
  const wait = (description && workerWaitOf(description)) ?? {
    task: 'next task',
    taskQueue: description?.taskQueue ?? options.client.taskQueue,
  };
  const command = workerCommandFor(wait, options.client.taskQueue);
  return sendJson(response, 202, {
    waiting_for_worker: { task_queue: wait.taskQueue, command },
    message: `Sent, not applied yet: no worker has taken it within ${WORKER_WAIT_NOTICE_MS / 1000} s (task queue '${wait.taskQueue}'). It is applied once one does: start one with ${command}.`,
  });
}

/**
 * A run's live feed (SSE): its events as timeline rows, the model's tokens as it writes them, and the
 * panels (overview, approvals, transcript, children) again when they change; `end` when the run has ended.
 */
async function liveFeed(
  request: IncomingMessage,
  response: ServerResponse,
  feed: { options: ConsoleOptions; workflowId: string; url: URL; context: PageContext; stop: AbortController },
): Promise<void> {
  const { options, workflowId, url, context, stop } = feed;
  const after = Number(url.searchParams.get('after') ?? 0);
  request.on('close', () => stop.abort());
  response.writeHead(200, {
    ...SECURITY_HEADERS,
    'content-type': 'text/event-stream; charset=utf-8',
    connection: 'keep-alive',
  });
  const emit = (event: string, data: unknown) => {
    if (!stop.signal.aborted) response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  const keepAlive = setInterval(() => response.write(': keep-alive\n\n'), 15_000);
  const run = options.client.run(workflowId);
  const unit = forkUnitOf(await options.client.workflowType(workflowId).catch(() => undefined));
  let digest: string | null = null;
  let prices: TokenPrices | null = null;
  let pending: Promise<void> | null = null;
  let again = false;
  const events: RunEvent[] = [];
  /** The panels as they stand now; at most one refresh at a time, another one after it when asked meanwhile. */
  const refresh = (): Promise<void> => {
    if (pending) {
      again = true;
      return pending;
    }
    pending = (async () => {
      await new Promise((resolve) => setTimeout(resolve, REFRESH_MS));
      do {
        again = false;
        const panels = await readPanels(options, run.workflowId, events, digest, context).catch(() => null);
        if (!panels) continue;
        digest = panels.digest;
        prices = panels.view.status?.prices ?? null;
        emit('panels', panels.html);
      } while (again && !stop.signal.aborted);
    })().finally(() => (pending = null));
    return pending;
  };
  const texts = new Map<string, string>();
  const quiet = setInterval(() => void refresh(), QUIET_REFRESH_MS);
  try {
    emit('hello', { workflow_id: workflowId, after });
    const followed = await followRunEvents(
      run,
      {
        event: (event) => {
          events.push(event);
          emit('timeline', { seq: event.seq, html: timelineRows([event], prices, unit) });
          if (event.event_type === 'llm_call_end') emit('live', { llm_call: event.llm_call, done: true });
          void refresh();
        },
        chunk: (event) => {
          if (event.event_type !== 'llm_chunk_arrive') return;
          const key = `${event.llm_call}:${event.attempt}`;
          const text = event.accumulated_content ?? `${texts.get(key) ?? ''}${event.chunk}`;
          texts.set(key, text);
          emit('live', { llm_call: event.llm_call, attempt: event.attempt, text });
        },
      },
      { after, signal: stop.signal, children: false },
    );
    if (followed.ended && !stop.signal.aborted) {
      await refresh();
      emit('end', { workflow_id: workflowId });
    }
  } finally {
    clearInterval(keepAlive);
    clearInterval(quiet);
    await (pending as Promise<void> | null)?.catch(() => undefined);
    response.end();
  }
}

/** The run's panels now, as HTML; the transcript only when its digest changed. */
async function readPanels(
  options: ConsoleOptions,
  workflowId: string,
  events: RunView['events'],
  digest: string | null,
  context: PageContext,
): Promise<{ view: RunView; digest: string | null; html: Record<string, string | boolean> }> {
  const run = options.client.run(workflowId);
  const description = await run.workflow.describe();
  const described = describedRun(workflowId, description);
  const { execution } = described;
  // Each query waits a few seconds for a worker at most: the panels say when none answers.
  const worker = askingWorker(run, description);
  const [status, version, children, actions, forks] = await Promise.all([
    worker.ask(() => run.status(Number.MAX_SAFE_INTEGER)),
    worker.ask(() => run.transcriptVersion()),
    childTree(options.client, workflowId, [], 4).catch(() => []),
    run.billableActions().catch(() => null),
    options.client.forksOf(workflowId).catch(() => []),
  ]);
  const changed = version === undefined || version.digest !== digest;
  const transcriptRead = changed ? await readTranscript(run, execution, worker) : null;
  const view: RunView = {
    ...described,
    status: status ?? null,
    unserved: worker.unserved() ?? null,
    events,
    eventsBefore: 0,
    eventsDropped: 0,
    transcript: transcriptRead,
    children: withStartedChildren(children, events),
    forks,
    failure: execution === 'failed' ? await failureOf(run) : null,
    result: null,
    actions,
    detailsPending: false,
  };
  return {
    view,
    digest: version?.digest ?? null,
    html: {
      state: stateBadge(view),
      running: isRunning(view),
      overview: overview(view, Date.now(), context),
      approvals: approvals(view, context),
      children: childrenPanel(view),
      extend: extendForm(view, context),
      ...(changed ? { transcript: transcript(view.transcript) } : {}),
    },
  };
}
