// The patchloop console's only script: live updates of a run's page over SSE (markup rendered by the
// server), the actions as JSON POSTs, and a refreshing run list. No build step, no dependencies.

const main = document.querySelector('main');
const notice = document.getElementById('notice');

function say(text, kind = 'info') {
  if (!notice) return;
  notice.textContent = text;
  notice.className = kind;
}

/** POSTs an action as JSON; the session cookie (SameSite=Strict) and the page's own origin go with it. */
async function act(workflowId, action, body) {
  const response = await fetch(`/api/runs/${encodeURIComponent(workflowId)}/${action}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    credentials: 'same-origin',
    body: JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(answer.error?.message ?? `the console answered ${response.status}`);
  return answer;
}

function replace(id, html) {
  const element = document.getElementById(id);
  if (element && typeof html === 'string') element.innerHTML = html;
}

function runPage() {
  const workflowId = main.dataset.workflowId;
  let after = Number(main.dataset.after || 0);
  const live = document.getElementById('live');
  const tokens = live.querySelector('.tokens');
  const call = live.querySelector('.call');
  const timeline = document.getElementById('timeline');
  const controls = document.getElementById('controls');

  // "fork from here" on a model call of the timeline: a new run from the context before it, then its page.
  document.addEventListener('click', async (event) => {
    const button = event.target.closest('button[data-fork-at]');
    if (!button) return;
    button.disabled = true;
    try {
      const answer = await act(workflowId, 'fork', { at: Number(button.dataset.forkAt) });
      window.location.href = `/runs/${encodeURIComponent(answer.workflow_id)}`;
    } catch (error) {
      say(error.message, 'error');
      button.disabled = false;
    }
  });

  document.addEventListener('click', async (event) => {
    const button = event.target.closest('button[data-action]');
    if (!button) return;
    const item = button.closest('li[data-tool-call-id]');
    const reason = item.querySelector('input.reason')?.value || undefined;
    const body = { tool_call_id: item.dataset.toolCallId, reason, run: item.dataset.run };
    button.disabled = true;
    try {
      const answer = await act(workflowId, button.dataset.action, body);
      if (answer.waiting_for_worker) say(answer.message, 'waiting');
      else say(`${button.dataset.action === 'approve' ? 'Approved' : 'Rejected'} ${body.tool_call_id}.`);
    } catch (error) {
      say(error.message, 'error');
      button.disabled = false;
    }
  });

  document.addEventListener('submit', async (event) => {
    const form = event.target.closest('form[data-action]');
    if (!form) return;
    event.preventDefault();
    const data = Object.fromEntries(new FormData(form));
    const action = { message: 'message', abort: 'abort', extend: 'extend-budget' }[form.dataset.action];
    let body = data;
    if (action === 'extend-budget')
      body = Object.fromEntries(
        Object.entries(data)
          .filter(([, value]) => value !== '')
          .map(([name, value]) => [name, Number(value)]),
      );
    const submit = form.querySelector('button[type=submit]');
    submit.disabled = true;
    try {
      const answer = await act(workflowId, action, body);
      if (action === 'message') form.reset();
      // No worker serves the run: the server says what happens and what to start.
      if (answer.waiting_for_worker) say(answer.message, 'waiting');
      else if (action === 'message') say('Message sent: the run reads it at its next step.');
      else if (action === 'abort') say('Abort sent.');
      else say('Budget extended.');
    } catch (error) {
      say(error.message, 'error');
    } finally {
      submit.disabled = false;
    }
  });

  if (main.dataset.details) readDetails(workflowId, main.dataset.details === 'all');
  if (main.dataset.running !== 'true') return;
  // From the start of a model call under way (its rows are on the page already), so its tokens come too.
  const from = Number(main.dataset.followAfter || after);
  const source = new EventSource(`/runs/${encodeURIComponent(workflowId)}/live?after=${from}`);
  source.addEventListener('timeline', (message) => {
    const { seq, html } = JSON.parse(message.data);
    if (seq <= after) return;
    after = seq;
    timeline.insertAdjacentHTML('beforeend', html);
  });
  source.addEventListener('live', (message) => {
    const data = JSON.parse(message.data);
    if (data.done) {
      live.hidden = true;
      tokens.textContent = '';
      return;
    }
    live.hidden = false;
    call.textContent = `(model call ${data.llm_call})`;
    tokens.textContent = data.text;
  });
  source.addEventListener('panels', (message) => {
    const panels = JSON.parse(message.data);
    replace('state', panels.state);
    replace('overview', panels.overview);
    replace('approvals', panels.approvals);
    replace('children', panels.children);
    replace('transcript', panels.transcript);
    // Added once the run reports a budget; never replaced after, so what is typed in it stays.
    if (!document.querySelector('#extend form')) replace('extend', panels.extend);
    if (controls) controls.hidden = !panels.running;
    main.dataset.running = String(panels.running);
  });
  source.addEventListener('end', () => {
    source.close();
    live.hidden = true;
    main.dataset.ended = 'true';
  });
}

/** A closed run's details (status, timeline, a transcript its result left out), read once it is shown. */
async function readDetails(workflowId, allEvents) {
  try {
    const response = await fetch(`/runs/${encodeURIComponent(workflowId)}/details${allEvents ? '?events=all' : ''}`, {
      credentials: 'same-origin',
      headers: { accept: 'application/json' },
    });
    const details = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(details.error?.message ?? `the console answered ${response.status}`);
    for (const id of ['state', 'overview', 'transcript', 'children']) replace(id, details[id]);
    replace('timeline-panel', details.timeline);
    delete main.dataset.details;
    main.dataset.detailsRead = 'true';
  } catch (error) {
    say(`The run's details could not be read: ${error.message}`, 'error');
  }
}

function runList() {
  const rows = document.getElementById('run-rows');
  setInterval(async () => {
    if (document.hidden) return;
    const response = await fetch(`/fragments/runs${location.search}`, { credentials: 'same-origin' });
    if (response.ok) rows.innerHTML = await response.text();
  }, 3000);
}

if (main?.dataset.page === 'run') runPage();
if (main?.dataset.page === 'runs') runList();
