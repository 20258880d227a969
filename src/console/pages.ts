import type { ForkMemo, ForkSummary, RunSummary } from '../client/patchloop-client';
import { describeEvent, failedTurnText } from '../client/follow';
import { actionsLine, type BillableActions } from '../client/billable-actions';
import { unansweredTask, workerCommandFor, type WorkerWait } from '../client/worker-wait';
import type { Message } from '../context';
import { forkPoint, forkUnitOf, type AgentRunResult, type ForkUnit } from '../runtime';
import { costOf, isClearedResult, isSummaryMessage, type RunEvent, type RunStatus, type TokenPrices } from '../runtime';

/**
 * The console's HTML, rendered on the server from what the client reads (list, status, events,
 * transcript): the browser gets finished markup, and the live feed sends fragments from the same
 * functions. Every value from a run goes through `escape`; no page holds a token or key.
 */

function escape(value: unknown): string {
  return String(value ?? '')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** Where the console's pages link: its own run pages, and Temporal's web UI when known. */
export interface PageContext {
  /** The Temporal web UI's page of a workflow, or null when the UI's address is unknown. */
  temporalLink(workflowId: string): string | null;
  /** Whether the browser may act (signed in with the token). */
  signedIn: boolean;
  /** The task queue the console's settings name: the worker command a page suggests names another. */
  taskQueue: string;
}

const runPath = (workflowId: string) => `/runs/${encodeURIComponent(workflowId)}`;

function layout(title: string, body: string, main: Record<string, string> = {}): string {
  const data = Object.entries(main)
    .map(([name, value]) => ` data-${name}="${escape(value)}"`)
    .join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · patchloop console</title>
<link rel="stylesheet" href="/assets/console.css">
<script type="module" src="/assets/console.js"></script>
</head>
<body>
<header class="top"><a href="/" class="brand">patchloop console</a></header>
<main${data}>
${body}
</main>
</body>
</html>
`;
}

function time(iso: string | null | undefined): string {
  if (!iso) return '';
  return `<time datetime="${escape(iso)}">${escape(iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z'))}</time>`;
}

function duration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return minutes < 60
    ? `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`
    : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

const badge = (state: string) =>
  `<span class="state state-${escape(state.replace(/\W+/g, '_'))}">${escape(state)}</span>`;

// ---------------------------------------------------------------------------------------------------
// The run list

export interface ListFilters {
  agent: string;
  /** Runs the gateway started for this principal (docs/gateway.md). */
  principal: string;
  state: string;
  q: string;
}

export function runListPage(
  runs: RunSummary[],
  filters: ListFilters,
  states: readonly string[],
  context: PageContext,
  now: number,
): string {
  const options = ['', ...states]
    .map(
      (state) =>
        `<option value="${escape(state)}"${state === filters.state ? ' selected' : ''}>${escape(state || 'any state')}</option>`,
    )
    .join('');
  return layout(
    'runs',
    `<h1>Runs</h1>
<form class="filters" method="get" action="/" role="search">
  <label>Agent <input name="agent" value="${escape(filters.agent)}" placeholder="any agent"></label>
  <label>Principal <input name="principal" value="${escape(filters.principal)}" placeholder="any principal"></label>
  <label>State <select name="state">${options}</select></label>
  <label>Text <input name="q" value="${escape(filters.q)}" placeholder="workflow id or agent"></label>
  <button type="submit">Filter</button>
</form>
<table class="runs" id="runs">
<thead><tr><th>Workflow id</th><th>Agent</th><th>State</th><th>Iterations</th><th>Tool calls</th><th>Tokens</th><th>Started</th><th>Duration</th><th></th></tr></thead>
<tbody id="run-rows">${runRows(runs, context, now)}</tbody>
</table>`,
    { page: 'runs' },
  );
}

export function runRows(runs: RunSummary[], context: PageContext, now: number): string {
  if (runs.length === 0) return '<tr><td colspan="9" class="empty">No runs found.</td></tr>';
  return runs
    .map((run) => {
      const ended = run.closed ? Date.parse(run.closed) : now;
      const ui = context.temporalLink(run.workflow_id);
      return `<tr data-workflow-id="${escape(run.workflow_id)}">
<td><a href="${runPath(run.workflow_id)}">${escape(run.workflow_id)}</a>${run.parent_workflow_id ? `<div class="sub">child of <a href="${runPath(run.parent_workflow_id)}">${escape(run.parent_workflow_id)}</a></div>` : ''}</td>
<td>${escape(run.agent ?? '-')}${run.principal ? `<div class="sub">by ${escape(run.principal)}</div>` : ''}</td>
<td>${badge(run.status)}</td>
<td class="num">${escape(run.iterations ?? '-')}</td>
<td class="num">${escape(run.tool_calls ?? '-')}</td>
<td class="num">${escape(run.total_tokens ?? '-')}</td>
<td>${time(run.started)}</td>
<td class="num">${escape(duration(ended - Date.parse(run.started)))}</td>
<td>${ui ? `<a href="${escape(ui)}" class="external" rel="noreferrer">Temporal</a>` : ''}</td>
</tr>`;
    })
    .join('\n');
}

// ---------------------------------------------------------------------------------------------------
// One run

/** A child run in the tree: from the visibility store and the parent's `subagent_started` events. */
export interface ChildNode {
  workflow_id: string;
  agent: string | null;
  status: string;
  children: ChildNode[];
}

/** Everything a run's page shows, as the server read it. */
export interface RunView {
  workflowId: string;
  type: string;
  /** Temporal's status of the execution (running, completed, failed, ...). */
  execution: string;
  started: string;
  closed: string | null;
  parent: string | null;
  status: RunStatus | null;
  /**
   * No worker serves the run now: a task of it has waited for one, or its queries went unanswered (the
   * page then shows what needs no worker: description, search attributes, a recorded result).
   */
  unserved: WorkerWait | null;
  events: RunEvent[];
  /** Events the run's log holds before the first of `events` (a closed run is read from its newest). */
  eventsBefore: number;
  eventsDropped: number;
  transcript: Message[] | null;
  children: ChildNode[];
  failure: string | null;
  history: { events: number; bytes: number };
  /** Its billable Temporal Cloud actions so far (docs/runs.md#billable-actions); null until read. */
  actions: BillableActions | null;
  /** The run as the visibility store has it (agent, state, iterations, tool calls, tokens). */
  summary: RunSummary;
  /** The run this one is a fork of, and the iteration or turn (its start memo). */
  forkedFrom?: ForkMemo | null;
  /** Its forks (`PatchloopForkOf`). */
  forks?: ForkSummary[];
  /** A closed run's result as recorded (no transcript filled in); null while it runs, or when it has none. */
  result: AgentRunResult | null;
  /**
   * A closed run read without its queries (each replays its history on a worker): the status, the
   * timeline and a transcript its result leaves out are read afterwards (`/runs/<id>/details`).
   */
  detailsPending: boolean;
}

export const isRunning = (view: Pick<RunView, 'execution'>) => view.execution === 'running';

/** Timeline rows a run's page starts with: the newest ones (`?events=all` shows every event the log holds). */
export const TIMELINE_ROWS = 300;

export function runPage(view: RunView, context: PageContext, now: number, allEvents = false): string {
  const ui = context.temporalLink(view.workflowId);
  const last = view.events.at(-1)?.seq ?? 0;
  // A model call under way when the page was read: the live feed starts at its start, for its tokens.
  const open = view.events.findLast(
    (event) =>
      event.event_type === 'llm_call_start' &&
      !view.events.some((later) => later.event_type === 'llm_call_end' && later.llm_call === event.llm_call),
  );
  return layout(
    view.workflowId,
    `<nav class="crumbs"><a href="/">Runs</a>${view.parent ? ` › <a href="${runPath(view.parent)}">${escape(view.parent)}</a>` : ''} › <span>${escape(view.workflowId)}</span></nav>
<h1><span class="agent">${escape(view.status?.agent ?? view.summary.agent ?? view.type)}</span> <code>${escape(view.workflowId)}</code> <span id="state">${stateBadge(view)}</span></h1>
${view.forkedFrom ? `<p class="sub forked-from">Forked from <a href="${runPath(view.forkedFrom.workflow_id)}">${escape(view.forkedFrom.workflow_id)}</a> at ${escape(forkPoint(view.forkedFrom.at, view.forkedFrom.unit))}</p>` : ''}
<p class="links">${view.type}${ui ? ` · <a href="${escape(ui)}" class="external" rel="noreferrer">open in the Temporal web UI</a>` : ''}</p>
<p id="notice" role="status" aria-live="polite"></p>
<section id="overview" class="panel">${overview(view, now, context)}</section>
<section id="approvals" class="panel">${approvals(view, context)}</section>
<section id="live" class="panel live" hidden><h2>The model is writing <span class="call"></span></h2><pre class="tokens" aria-live="off"></pre></section>
${controls(view, context)}
<div class="columns">
<section class="panel transcript"><h2>Transcript</h2><div id="transcript">${view.detailsPending && view.transcript === null ? reading(view, allEvents) : transcript(view.transcript)}</div></section>
<section class="panel timeline"><h2>Timeline</h2><div id="timeline-panel">${view.detailsPending ? reading(view, allEvents) : timelinePanel(view, allEvents)}</div></section>
</div>
<section id="children" class="panel">${childrenPanel(view)}</section>`,
    {
      page: 'run',
      'workflow-id': view.workflowId,
      after: String(last),
      'follow-after': String(open ? open.seq - 1 : last),
      running: String(isRunning(view)),
      ...(view.detailsPending ? { details: allEvents ? 'all' : 'pending' } : {}),
    },
  );
}

/** What a closed run's page shows while its details are read (without a script: a link that reads them). */
function reading(view: RunView, allEvents: boolean): string {
  const now = `${runPath(view.workflowId)}?details=now${allEvents ? '&amp;events=all' : ''}`;
  return `<p class="sub reading">Reading… (the run has ended: a worker replays its history to answer, once; the console keeps what it read)<noscript> <a href="${now}">Read it now</a></noscript></p>`;
}

/** The timeline: the newest rows (`allEvents`: every one the log holds), with notes on what is left out. */
export function timelinePanel(view: RunView, allEvents: boolean): string {
  const shown = allEvents ? view.events : view.events.slice(-TIMELINE_ROWS);
  const hidden = view.eventsBefore + view.events.length - shown.length;
  return `${view.eventsDropped > 0 ? `<p class="sub">${escape(view.eventsDropped)} older events left the run's log.</p>` : ''}${hidden > 0 ? `<p class="sub">${escape(hidden)} earlier events are not shown: <a href="${runPath(view.workflowId)}?events=all">show all</a>.</p>` : ''}
<table><colgroup><col class="seq"><col class="time"><col><col class="figure"><col class="figure"><col class="cost"></colgroup><thead><tr><th>#</th><th>Time</th><th>Event</th><th>Duration</th><th>Tokens</th><th>Cost</th></tr></thead>
<tbody id="timeline">${timelineRows(shown, view.status?.prices ?? null, forkUnitOf(view.type))}</tbody></table>`;
}

/** The run's state as the page's header shows it. */
export function stateBadge(view: Pick<RunView, 'execution' | 'status' | 'result' | 'summary'>): string {
  return badge(stateOf(view));
}

function stateOf(view: Pick<RunView, 'execution' | 'status' | 'result' | 'summary'>): string {
  if (view.execution !== 'running' && view.execution !== 'completed') return view.execution;
  return view.status?.state ?? view.result?.status ?? view.summary.status;
}

/**
 * What a page of a run no worker serves says: which task queue, since when, what it shows without one
 * and the command that starts one; the page goes on by itself once a worker answers.
 */
function unservedNotice(view: RunView, context: PageContext): string {
  const wait = view.unserved;
  if (!wait) return '';
  const seconds = Math.round(wait.waitedMs / 1000);
  return `<p class="waiting unserved" role="status">No worker serves this run now: none has ${escape(unansweredTask(wait))} for ${escape(seconds)} s on task queue <code>${escape(wait.taskQueue)}</code>. Its status, timeline and transcript need one, so this page shows what the server keeps (its state as last reported, its counters). Start one with <code>${escape(workerCommandFor(wait, context.taskQueue))}</code>; the page goes on once it answers.</p>`;
}

/** A run in a durable wait: what it waits for and when it wakes at the latest; the events it holds. */
function waitNotice(status: RunStatus | null): string {
  const lines = (status?.waiting ?? []).map(
    (wait) =>
      `<p class="waiting durable-wait" role="status">Waiting (${escape(wait.tool)}${wait.event ? ` for event <code>${escape(wait.event)}</code>` : ''}) until <time datetime="${escape(wait.wake_at)}">${escape(wait.wake_at)}</time>${wait.reason ? `: ${escape(wait.reason)}` : ''}. No worker slot is held meanwhile; a message wakes it early.</p>`,
  );
  if (status?.held_events)
    lines.push(`<p class="sub">Events held for a later wait: ${escape(status.held_events)}.</p>`);
  return lines.join('');
}

/** A session whose latest turn failed: the error, and that the message stays. */
function failedTurn(status: RunStatus | null): string {
  const failure = status?.last_turn_failure;
  return failure ? `<p class="failure turn-failed">The last turn failed: ${escape(failedTurnText(failure))}</p>` : '';
}

export function overview(view: RunView, now: number, context: PageContext): string {
  const status = view.status;
  const ended = view.closed ? Date.parse(view.closed) : now;
  // Without the status (a closed run read without replay): its result and the visibility store's figures.
  const usage = status ? status.usage : view.result?.usage;
  const budget = status ? status.budget : view.result?.budget;
  const cost = budget?.spent['max_cost_usd'];
  const abortReason = status ? (status.abort_requested ? status.abort_reason : null) : view.result?.abort_reason;
  const facts: Array<[string, string]> = [
    ['State', stateBadge(view)],
    ['Iterations', escape(status?.iteration ?? view.summary.iterations ?? '-')],
    ['Model calls', escape(status?.llm_calls ?? budget?.spent['max_llm_calls'] ?? '-')],
    ['Tool calls', escape(status?.tool_calls ?? view.summary.tool_calls ?? '-')],
    [
      'Tokens',
      usage
        ? `${escape(usage.total_tokens)} <span class="sub">(${escape(usage.prompt_tokens)} in, ${escape(usage.completion_tokens)} out)</span>`
        : '-',
    ],
    ...(cost !== undefined ? ([['Cost', `$${escape(cost.toFixed(4))}`]] as Array<[string, string]>) : []),
    ['Started', time(view.started)],
    ['Duration', escape(duration(ended - Date.parse(view.started)))],
    ['History', `${escape(view.history.events)} events, ${escape(view.history.bytes)} bytes`],
    ['Billable actions', view.actions ? escape(actionsLine(view.actions)) : '-'],
  ];
  return `${unservedNotice(view, context)}<dl class="facts">${facts.map(([name, value]) => `<div><dt>${name}</dt><dd>${value}</dd></div>`).join('')}</dl>
${view.failure ? `<p class="failure">Failed: ${escape(view.failure)}</p>` : ''}${failedTurn(status)}${waitNotice(status)}
${typeof abortReason === 'string' ? `<p class="sub">Abort requested${abortReason ? `: ${escape(abortReason)}` : ''}.</p>` : ''}
${gauges(status)}`;
}

function gauge(label: string, value: number, max: number, detail: string, high?: number): string {
  const share = max > 0 ? Math.min(100, (value / max) * 100) : 0;
  return `<div class="gauge"><span class="label">${escape(label)}</span><meter min="0" max="${escape(max)}" value="${escape(value)}"${high !== undefined ? ` high="${escape(high)}"` : ''} optimum="0">${escape(share.toFixed(0))}%</meter><span class="detail">${detail}</span></div>`;
}

function gauges(status: RunStatus | null): string {
  if (!status) return '';
  const parts: string[] = [];
  const context = status.context;
  if (context.window_tokens !== null)
    parts.push(
      gauge(
        'Context',
        context.tokens,
        context.window_tokens,
        `${escape(context.tokens)} of ${escape(context.window_tokens)} tokens${context.compact_at_tokens !== null ? `, compacts above ${escape(context.compact_at_tokens)}` : ''}; ${escape(context.compactions)} compaction(s)`,
        context.compact_at_tokens ?? undefined,
      ),
    );
  else
    parts.push(
      `<div class="gauge"><span class="label">Context</span><span class="detail">about ${escape(context.tokens)} tokens (the model's window is unknown); ${escape(context.compactions)} compaction(s)</span></div>`,
    );
  for (const [name, limit] of Object.entries(status.budget?.limit ?? {})) {
    if (limit === null) continue;
    const spent = status.budget!.spent[name] ?? 0;
    const label = `Budget: ${name.replace(/^max_/, '').replaceAll('_', ' ')}`;
    parts.push(gauge(label, spent, limit, `${escape(round(spent))} of ${escape(limit)}`, limit * 0.9));
  }
  if (status.budget?.awaiting)
    parts.push(`<p class="waiting">Waiting for a budget extension (${escape(status.budget.awaiting.join(', '))}).</p>`);
  return `<div class="gauges">${parts.join('')}</div>`;
}

const round = (value: number) => (Number.isInteger(value) ? value : Number(value.toFixed(4)));

export function approvals(view: RunView, context: PageContext): string {
  // Without the status query (no worker answered) a running run's calls are unknown: its state as last
  // reported says whether it waits for decisions, and the panel never says otherwise.
  if (view.status === null && isRunning(view))
    return stateOf(view) === 'awaiting_approval'
      ? '<h2>Waiting for approval</h2><p class="sub unknown">The run waits for a decision, but no worker answers for it now: the calls it waits for show here once one does.</p>'
      : '<h2>Approvals</h2><p class="sub unknown">Not known until a worker answers for the run.</p>';
  const pending = view.status?.pending_approvals ?? [];
  if (pending.length === 0 || !isRunning(view))
    return '<h2>Approvals</h2><p class="sub">Nothing waits for a decision.</p>';
  const disabled = context.signedIn ? '' : ' disabled';
  return `<h2>Waiting for approval</h2>
<ul class="approvals">${pending
    .map(
      (
        entry,
      ) => `<li data-tool-call-id="${escape(entry.tool_call_id)}"${entry.workflow_id ? ` data-run="${escape(entry.workflow_id)}"` : ''}>
<div><strong>${escape(entry.tool_name)}</strong>${entry.agent ? ` <span class="sub">(${escape(entry.agent)} agent)</span>` : ''} <code>${escape(entry.tool_call_id)}</code></div>
<pre class="json">${escape(JSON.stringify(entry.arguments, null, 2))}</pre>
<input class="reason" name="reason" placeholder="reason (optional)" aria-label="reason for ${escape(entry.tool_name)}"${disabled}>
<button type="button" data-action="approve" class="approve"${disabled}>Approve</button>
<button type="button" data-action="reject" class="reject"${disabled}>Reject</button>
</li>`,
    )
    .join('')}</ul>${signInNote(context)}`;
}

function signInNote(context: PageContext): string {
  return context.signedIn
    ? ''
    : '<p class="sub signin">Actions need the console token: open the sign-in link <code>patchloop console</code> printed, or <a href="/login">sign in</a>.</p>';
}

/** Abort, a message, a budget extension: rendered once (the feed never replaces what a person types). */
/** The form that extends a run's budget, once the run reports one (the live feed adds it when it appears). */
export function extendForm(view: RunView, context: PageContext): string {
  const disabled = context.signedIn ? '' : ' disabled';
  return view.status?.budget
    ? `<form class="extend" data-action="extend">
<h3>Extend the budget</h3>
<label>Tokens <input name="tokens" type="number" min="1"${disabled}></label>
<label>Model calls <input name="llm_calls" type="number" min="1"${disabled}></label>
<label>Dollars <input name="cost_usd" type="number" min="0" step="0.01"${disabled}></label>
<label>Seconds <input name="wall_seconds" type="number" min="1"${disabled}></label>
<button type="submit"${disabled}>Extend</button>
</form>`
    : '';
}

function controls(view: RunView, context: PageContext): string {
  const disabled = context.signedIn ? '' : ' disabled';
  const hidden = isRunning(view) ? '' : ' hidden';
  return `<section id="controls" class="panel controls"${hidden}>
<h2>Steer</h2>
<form class="message" data-action="message">
<label for="message-text">Message to the run</label>
<textarea id="message-text" name="content" rows="2" placeholder="Tell the agent something; it reads it at its next step"${disabled}></textarea>
<button type="submit"${disabled}>Send</button>
</form>
<form class="abort" data-action="abort">
<input name="reason" placeholder="reason (optional)" aria-label="abort reason"${disabled}>
<button type="submit" class="danger"${disabled}>Abort</button>
</form>
<div id="extend">${extendForm(view, context)}</div>
${signInNote(context)}
</section>`;
}

// The transcript: a conversation, tool calls folded with their arguments and results side by side.

interface ToolCall {
  id: string;
  function: { name: string; arguments: string };
}

export function transcript(messages: Message[] | null): string {
  if (messages === null)
    return '<p class="sub">The transcript could not be read (no worker answers queries for this run now).</p>';
  if (messages.length === 0) return '<p class="sub">No messages yet.</p>';
  const results = new Map<string, Message>();
  for (const message of messages)
    if (message['role'] === 'tool' && typeof message['tool_call_id'] === 'string')
      results.set(message['tool_call_id'], message);
  const answered = new Set<string>();
  const parts: string[] = [];
  messages.forEach((message, index) => {
    const role = String(message['role']);
    if (role === 'tool' && answered.has(String(message['tool_call_id']))) return;
    parts.push(messageHtml(message, index, results, answered));
  });
  return `<ol class="messages" data-count="${messages.length}">${parts.join('\n')}</ol>`;
}

function messageHtml(message: Message, index: number, results: Map<string, Message>, answered: Set<string>): string {
  const role = String(message['role']);
  const marks: string[] = [];
  if (isSummaryMessage(message)) marks.push('<span class="mark summary">summary of earlier messages</span>');
  const text = typeof message['content'] === 'string' ? message['content'] : '';
  if (/<Truncated due to cancel[^>]*>$/.test(text))
    marks.push('<span class="mark truncated">cut short by an abort</span>');
  const body =
    role === 'system'
      ? `<details><summary>System prompt (${escape(text.length)} characters)</summary>${contentHtml(message['content'])}</details>`
      : isSummaryMessage(message)
        ? `<details><summary>The summary</summary>${contentHtml(message['content'])}</details>`
        : contentHtml(message['content']);
  const calls = Array.isArray(message['tool_calls']) ? (message['tool_calls'] as unknown as ToolCall[]) : [];
  const callsHtml = calls
    .map((call) => {
      const result = results.get(call.id);
      if (result) answered.add(call.id);
      return toolCallHtml(call, result);
    })
    .join('');
  const orphan =
    role === 'tool'
      ? `<div class="tool-result">result of <code>${escape(message['tool_call_id'])}</code>${resultHtml(message)}</div>`
      : '';
  return `<li class="message role-${escape(role)}" data-index="${index}"><div class="role">${escape(role)} ${marks.join(' ')}</div>${role === 'tool' ? '' : body}${callsHtml}${orphan}</li>`;
}

function toolCallHtml(call: ToolCall, result: Message | undefined): string {
  let args: string;
  try {
    args = JSON.stringify(JSON.parse(call.function.arguments), null, 2);
  } catch {
    args = call.function.arguments;
  }
  const cleared = result && isClearedResult(result['content']);
  const state = !result ? 'waiting' : cleared ? 'cleared' : '';
  return `<details class="tool-call" data-tool-call-id="${escape(call.id)}"><summary><span class="tool">${escape(call.function.name)}</span> <code class="args-preview">${escape(preview(call.function.arguments, 80))}</code>${state ? ` <span class="mark ${state}">${state === 'cleared' ? 'result cleared to save context' : 'no result yet'}</span>` : ''}</summary>
<div class="call-grid"><div><h4>Arguments</h4><pre class="json">${escape(args)}</pre></div><div><h4>Result</h4>${result ? resultHtml(result) : '<p class="sub">none yet</p>'}</div></div></details>`;
}

function resultHtml(message: Message): string {
  const content = message['content'];
  if (typeof content === 'string') {
    try {
      const parsed = JSON.parse(content) as unknown;
      if (parsed !== null && typeof parsed === 'object')
        return `<pre class="json">${escape(JSON.stringify(parsed, null, 2))}</pre>`;
    } catch {
      // Plain text.
    }
  }
  return contentHtml(content);
}

function contentHtml(content: unknown): string {
  if (content === null || content === undefined || content === '') return '';
  if (typeof content === 'string') return `<div class="text">${escape(content)}</div>`;
  if (!Array.isArray(content)) return `<pre class="json">${escape(JSON.stringify(content, null, 2))}</pre>`;
  return content
    .map((part: Record<string, unknown>) => {
      if (part['type'] === 'text') return `<div class="text">${escape(part['text'])}</div>`;
      const image = part['image_url'] as { url?: unknown } | undefined;
      if (part['type'] === 'image_url' && typeof image?.url === 'string' && safeImage(image.url))
        return `<a href="${escape(image.url)}" rel="noreferrer" class="image"><img src="${escape(image.url)}" alt="an image in the conversation" loading="lazy"></a>`;
      return `<pre class="json">${escape(JSON.stringify(part, null, 2))}</pre>`;
    })
    .join('');
}

/** Images the page shows: web URLs and inline image data only (never `javascript:` or other schemes). */
function safeImage(url: string): boolean {
  return /^https?:\/\//i.test(url) || /^data:image\/(png|jpeg|gif|webp);base64,/i.test(url);
}

function preview(text: string, most: number): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > most ? `${flat.slice(0, most - 1)}…` : flat;
}

// The timeline: one row per event, with what it cost.

export function timelineRows(events: RunEvent[], prices: TokenPrices | null, unit: ForkUnit): string {
  return events.map((event) => timelineRow(event, prices, unit)).join('\n');
}

/**
 * "fork from here": on a run's model calls (the context before one is where a fork of that iteration
 * begins), on a session's turns (where a fork of that turn begins).
 */
function forkButton(event: RunEvent, unit: ForkUnit): string {
  const at =
    unit === 'iteration'
      ? event.event_type === 'llm_call_start'
        ? event.iteration
        : undefined
      : event.event_type === 'custom_event' && event.event_name === 'turn_started'
        ? (event.data as { turn?: number } | null)?.turn
        : undefined;
  if (at === undefined) return '';
  const title =
    unit === 'turn'
      ? 'a new session from the context as this turn began'
      : 'a new run from the context before this model call';
  return ` <button type="button" class="fork" data-fork-at="${escape(at)}" title="${title}">fork from here</button>`;
}

function timelineRow(event: RunEvent, prices: TokenPrices | null, unit: ForkUnit): string {
  const took =
    'duration_ms' in event
      ? duration(event.duration_ms)
      : event.event_type === 'tool_calls_batch_end' && event.total_execution_time !== undefined
        ? duration(event.total_execution_time * 1000)
        : '';
  const usage =
    event.event_type === 'llm_call_end' ||
    event.event_type === 'context_compaction_end' ||
    event.event_type === 'subagent_finished'
      ? event.usage
      : null;
  const cost = usage && prices ? costOf(usage, prices) : null;
  const line = (describeEvent(event) ?? '').trim();
  const child =
    event.event_type === 'subagent_started' || event.event_type === 'subagent_finished'
      ? ` <a href="${runPath(event.child_workflow_id)}" title="${escape(event.child_workflow_id)}">open the child run</a>`
      : '';
  const fork = forkButton(event, unit);
  return `<tr class="event type-${escape(event.event_type)}" data-seq="${event.seq}" data-type="${escape(event.event_type)}"><td class="num">${event.seq}</td><td>${escape(event.timestamp.slice(11, 23))}</td><td><span class="type">${escape(event.event_type)}</span> ${escape(preview(line, 240))}${child}${fork}</td><td class="num">${escape(took)}</td><td class="num">${usage ? `${usage.estimated ? '~' : ''}${escape(usage.total_tokens)}` : ''}</td><td class="num">${cost !== null ? `$${escape(cost.toFixed(5))}` : ''}</td></tr>`;
}

// The children panel: child runs as a tree, then the run's forks with the iteration each starts from.

export function childrenPanel(view: Pick<RunView, 'children' | 'forks'>): string {
  return `${childrenTree(view.children)}${forkList(view.forks ?? [])}`;
}

function forkList(forks: ForkSummary[]): string {
  if (forks.length === 0) return '';
  return `<h2>Forks</h2><ul class="forks">${forks
    .map(
      (fork) =>
        `<li><a href="${runPath(fork.workflow_id)}">${escape(fork.workflow_id)}</a> at ${escape(`${fork.unit} ${fork.at ?? '?'}`)} <span class="agent">${escape(fork.agent ?? '')}</span> ${badge(fork.status)}</li>`,
    )
    .join('')}</ul>`;
}

// Child runs as a tree.

function childrenTree(children: ChildNode[]): string {
  if (children.length === 0) return '<h2>Child runs</h2><p class="sub">This run started no other runs.</p>';
  return `<h2>Child runs</h2>${childList(children)}`;
}

function childList(children: ChildNode[]): string {
  return `<ul class="tree">${children
    .map(
      (child) =>
        `<li><a href="${runPath(child.workflow_id)}">${escape(child.workflow_id)}</a> <span class="agent">${escape(child.agent ?? '')}</span> ${badge(child.status)}${child.children.length > 0 ? childList(child.children) : ''}</li>`,
    )
    .join('')}</ul>`;
}

export function messagePage(title: string, text: string, form = ''): string {
  return layout(title, `<h1>${escape(title)}</h1><p>${escape(text)}</p>${form}`);
}

export function signInPage(problem = ''): string {
  return layout(
    'sign in',
    `<h1>Sign in</h1>
${problem ? `<p class="failure">${escape(problem)}</p>` : ''}
<p>The console's actions (approve, reject, abort, send a message, extend a budget) need its token: the value of <code>PATCHLOOP_CONSOLE_TOKEN</code>, or the one <code>patchloop console</code> printed.</p>
<form method="post" action="/login" class="signin">
<label>Token <input name="token" type="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
</form>`,
  );
}
