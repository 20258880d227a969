/**
 * The chat page: an AG-UI client (`HttpAgent` of @ag-ui/client) on a patchloop agent's thread. The
 * thread's id is kept in the browser, so a reload continues the same conversation on the server; a
 * tool call that needs approval ends the run with an interrupt, and the page's answer resumes it.
 */
import {
  HttpAgent,
  runHttpRequest,
  transformHttpEventStream,
  type BaseEvent,
  type Interrupt,
  type Message,
  type ResumeEntry,
  type RunAgentInput,
} from '@ag-ui/client';
import type { Observable } from 'rxjs';

/**
 * HttpAgent, with the protocol's connect (the gateway's `/connect`: the thread's conversation, and its
 * run in progress from its start, so a reloaded page has both), and whose Stop asks the gateway to
 * cancel the thread's run: the run is durable, so closing the stream alone (a reload, a lost
 * connection) leaves it going. The stream then ends with the run, cancelled.
 */
class PatchloopAgent extends HttpAgent {
  protected override connect(input: RunAgentInput): Observable<BaseEvent> {
    return transformHttpEventStream(runHttpRequest(() => this.fetch(`${this.url}/connect`, this.requestInit(input))));
  }

  override abortRun(): void {
    void fetch(`${this.url}/cancel`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ threadId: this.threadId }),
    });
  }
}

const element = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const agentName = new URLSearchParams(location.search).get('agent') ?? 'assistant';
const threadKey = `patchloop-thread-${agentName}`;
const threadId = localStorage.getItem(threadKey) ?? crypto.randomUUID();
localStorage.setItem(threadKey, threadId);
const agent = new PatchloopAgent({ url: `/ag-ui/${agentName}`, threadId });
const decisions = new Map<string, boolean>();
let busy = false;

function bubble(kind: string, text: string): HTMLElement {
  const node = document.createElement('div');
  node.className = `message ${kind}`;
  node.textContent = text;
  return node;
}

function messageNodes(message: Message): HTMLElement[] {
  if (message.role === 'user') return [bubble('user', typeof message.content === 'string' ? message.content : '')];
  if (message.role === 'tool') return [bubble('tool', `← ${message.content}`)];
  if (message.role !== 'assistant') return [];
  const nodes = message.content ? [bubble('assistant', message.content)] : [];
  for (const call of message.toolCalls ?? []) {
    const node = bubble('assistant call', `→ ${call.function.name} ${call.function.arguments}`);
    nodes.push(node);
  }
  return nodes;
}

function approvalNode(interrupt: Interrupt): HTMLElement {
  const card = document.createElement('div');
  card.className = 'approval';
  const question = document.createElement('p');
  question.textContent = `The agent asks: ${interrupt.message ?? interrupt.reason}`;
  card.append(question);
  for (const [label, approved] of [
    ['Approve', true],
    ['Reject', false],
  ] as const) {
    const button = document.createElement('button');
    button.textContent = label;
    if (!approved) button.className = 'secondary';
    button.disabled = busy || decisions.has(interrupt.id);
    button.addEventListener('click', () => decide(interrupt.id, approved));
    card.append(button, ' ');
  }
  return card;
}

function render(): void {
  const list = element('messages');
  list.replaceChildren(
    ...agent.messages.flatMap(messageNodes),
    ...(busy ? [] : agent.pendingInterrupts.map(approvalNode)),
  );
  element<HTMLButtonElement>('send').disabled = busy || agent.pendingInterrupts.length > 0;
  element<HTMLButtonElement>('stop').disabled = !busy;
  const state = agent.state as { status?: string; usage?: { total_tokens?: number } | null } | undefined;
  const tokens = state?.usage?.total_tokens;
  element('status').textContent = busy
    ? `running… ${state?.status ?? ''}`
    : `${state?.status ?? 'ready'}${tokens !== undefined ? ` · ${tokens} tokens so far` : ''}`;
}

/** A run: a new message, an interrupt's answers, or (`connect`) the thread as the server has it. */
async function run(resume?: ResumeEntry[], connect = false): Promise<void> {
  busy = true;
  render();
  try {
    if (connect) await agent.connectAgent();
    else await agent.runAgent(resume ? { resume } : {});
  } catch (error) {
    element('status').textContent = `error: ${(error as Error).message}`;
  } finally {
    busy = false;
    render();
  }
}

/** One interrupt answered; once all are, the next run resumes the thread with the answers. */
function decide(id: string, approved: boolean): void {
  decisions.set(id, approved);
  const open = agent.pendingInterrupts;
  if (open.some((interrupt) => !decisions.has(interrupt.id))) return render();
  const resume = open.map((interrupt) => ({
    interruptId: interrupt.id,
    status: 'resolved' as const,
    payload: { approved: decisions.get(interrupt.id) },
  }));
  decisions.clear();
  void run(resume);
}

agent.subscribe({ onMessagesChanged: () => render(), onStateChanged: () => render() });
element('ask').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = element<HTMLInputElement>('text');
  const text = input.value.trim();
  if (!text || busy) return;
  input.value = '';
  agent.addMessage({ id: crypto.randomUUID(), role: 'user', content: text });
  void run();
});
element('stop').addEventListener('click', () => agent.abortRun());
// The conversation so far (after a reload: the server's), and its run in progress, if one is.
void run(undefined, true);
