import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, describe, expect } from 'vitest';
import { testWithWorld } from '../support/fixtures';
import { validateToolLinkage } from '../../src/context';
import { startConsole, type ConsoleServer } from '../../src/console/server';
import { callTools, failWith, reply, toolCall as call } from '../../src/fake-model/steps';
import type { AgentDefinitionInput } from '../../src/runtime';
import { addTool, waitTool } from '../../src/tools/examples';
import { LIST_STATUSES } from '../../src/cli/syntax';
import { parseKey } from '../../src/config/environment';
import { scriptsByAgent } from '../../support/agent-scripts';
import { launchBrowser } from '../../support/browser';
import { runCli } from '../support/cli';
import { occurrencesInDatabase } from '../support/database';
import { clientOn } from '../support/temporal';
import type { RunHandle } from '../../src/client/patchloop-client';
import { spawnWorker } from '../../support/worker-process';
import { awaitingApproval, eventOf, eventually } from '../support/wait';

/**
 * The console in a real browser (Debian's Chromium through playwright-core) against a real dev server,
 * worker and fake model: one world, one console and one browser for the file. What is asserted is what
 * a person sees on the page.
 */
const TOKEN = 'console-test-token-0123456789';
const agents: AgentDefinitionInput[] = [
  { name: 'writer', instructions: 'You write.', tools: ['wait'] },
  { name: 'gatekeeper', instructions: 'You ask before adding.', tools: ['add'], needs_approval: ['add'] },
  { name: 'lead', instructions: 'You lead.', subagents: ['clerk'] },
  { name: 'clerk', instructions: 'You file.' },
  { name: 'reporter', instructions: 'You report.' },
  { name: 'sentry', instructions: 'You guard the sums.', tools: ['add'], needs_approval: ['add'] },
  { name: 'chatter', instructions: 'You chat along.' },
];
const words = (count: number) => Array.from({ length: count }, (_, index) => `word${index} `);

// Each agent's model calls, in the order the tests below make them.
const scripts = scriptsByAgent({
  writer: {
    instructions: 'You write.',
    steps: [
      reply('a short answer'),
      reply(words(40), { firstChunkDelayMs: 300, chunkDelayMs: 150 }),
      callTools([call('w1', 'wait', { seconds: 120 })]),
      callTools([call('w2', 'wait', { seconds: 0 })]),
      reply('done after the extension'),
    ],
  },
  gatekeeper: {
    instructions: 'You ask before adding.',
    steps: [
      callTools([call('a1', 'add', { a: 2, b: 3 })]),
      reply('2 + 3 = 5'),
      callTools([call('m1', 'add', { a: 1, b: 1 })]),
      reply('noted, in metric'),
      callTools([call('s1', 'add', { a: 4, b: 4 })]),
    ],
  },
  lead: {
    instructions: 'You lead.',
    steps: [callTools([call('l1', 'clerk', { input: 'file the report' })]), reply('the clerk filed it')],
  },
  clerk: { instructions: 'You file.', steps: [reply('filed')] },
  reporter: { instructions: 'You report.', steps: [reply('the first report'), reply('the second report')] },
  sentry: {
    instructions: 'You guard the sums.',
    steps: [callTools([call('n1', 'add', { a: 6, b: 7 })]), reply('6 + 7 = 13')],
  },
  chatter: {
    instructions: 'You chat along.',
    steps: [
      reply('hello!'),
      failWith(400, { message: 'Your message was flagged by the content filter' }),
      reply('still here'),
      failWith(400, { message: 'This one was flagged too' }),
    ],
  },
});

const it = testWithWorld({
  agents,
  tools: [addTool, waitTool],
  fake: { responder: scripts.responder },
});
/** The lead run of the first test; the child-run test opens it. */
let ledWorkflowId: string | undefined;
let consoleServer: ConsoleServer;
let browser: Browser;
let signedIn: BrowserContext;
let page: Page;

it.beforeAll(async ({ world }) => {
  browser = await launchBrowser();
  consoleServer = await startConsole({
    client: world.client,
    host: '127.0.0.1',
    port: 0,
    access: { token: TOKEN, loopbackBind: true },
    temporalLink: (id) => `http://temporal-ui.invalid/namespaces/default/workflows/${encodeURIComponent(id)}`,
    states: LIST_STATUSES,
  });
  signedIn = await browser.newContext();
  page = await signedIn.newPage();
  await page.goto(`${consoleServer.url}/login?token=${TOKEN}`);
});

afterAll(async () => {
  await browser?.close();
  await consoleServer?.close();
});

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const runUrl = (id: string) => `${consoleServer.url}/runs/${encodeURIComponent(id)}`;
const transcriptText = () => page.locator('#transcript').innerText();
/** A closed run's page reads its details after it is shown: until they are in (at once when kept). */
const detailsShown = async () => {
  await page.locator('main:not([data-details])').waitFor({ state: 'attached' });
  // Messages are laid out (`content-visibility: auto`) at the next frame: until then their text reads as empty.
  await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))');
};

describe('the console, in a browser', () => {
  it('lists the runs of two agents, with filters and links to each run and to the Temporal web UI', async ({
    world,
  }) => {
    const written = await world.client.start({ agent: 'writer', input: 'say something short' });
    const led = await world.client.start({ agent: 'lead', input: 'get the report filed' });
    ledWorkflowId = led.workflowId;
    await Promise.all([written.result(), led.result()]);
    // The visibility store lags a little behind: the page refreshes its rows by itself.
    await page.goto(consoleServer.url);
    const rowOf = (id: string) => page.locator(`#run-rows tr[data-workflow-id="${id}"]`);
    await rowOf(written.workflowId).waitFor();
    await rowOf(led.workflowId).waitFor();
    const row = rowOf(led.workflowId);
    expect(await row.locator('td').nth(1).innerText()).toBe('lead');
    expect(await row.locator('td').nth(2).innerText()).toBe('completed');
    expect(await rowOf(written.workflowId).locator('td').nth(1).innerText()).toBe('writer');
    expect(await row.locator('a.external').getAttribute('href')).toContain(encodeURIComponent(led.workflowId));
    // Filtered by agent: the other agent's runs are gone.
    await page.goto(`${consoleServer.url}/?agent=writer`);
    await rowOf(written.workflowId).waitFor();
    expect(await rowOf(led.workflowId).count()).toBe(0);
    // By text.
    await page.fill('input[name=q]', led.workflowId.slice(4, 16));
    await page.fill('input[name=agent]', '');
    await page.click('form.filters button');
    await rowOf(led.workflowId).waitFor();
    expect(await rowOf(written.workflowId).count()).toBe(0);
    await rowOf(led.workflowId).locator('a').first().click();
    await page.waitForURL(runUrl(led.workflowId));
    expect(await page.locator('h1 .agent').innerText()).toBe('lead');
  });

  it("shows a running run's tokens as the model writes them, then the answer in the transcript", async ({ world }) => {
    const run = await world.client.start({ agent: 'writer', input: 'write at length' });
    // The page opens while the model is writing: it gets the call's text so far, then the rest live.
    await eventually(() => ((world.fake.requests.at(-1)?.chunksWritten ?? 0) >= 2 ? true : undefined));
    await page.goto(runUrl(run.workflowId));
    const tokens = page.locator('#live .tokens');
    // Seen while the model is still writing: a prefix, then a longer one.
    await expect.poll(() => tokens.textContent(), { timeout: 10_000 }).toMatch(/word2 /);
    const early = (await tokens.textContent())!;
    expect(early).not.toContain('word39');
    await expect
      .poll(async () => (await tokens.textContent())!.length, { timeout: 10_000 })
      .toBeGreaterThan(early.length + 10);
    expect((await run.status()).state).toBe('running');
    await page.locator('main[data-ended=true]').waitFor({ state: 'attached' });
    expect(await transcriptText()).toContain('word39');
    expect(await page.locator('#state').innerText()).toBe('completed');
    expect(await page.locator('#timeline tr[data-type=react_end]').count()).toBe(1);
  });

  it('Approve lets a waiting run go on: the tool runs and the run completes', async ({ world }) => {
    const run = await world.client.start({ agent: 'gatekeeper', input: 'add 2 and 3' });
    await page.goto(runUrl(run.workflowId));
    const waiting = page.locator('#approvals li[data-tool-call-id=a1]');
    await waiting.waitFor();
    expect(await waiting.innerText()).toContain('"a": 2');
    await waiting.locator('button[data-action=approve]').click();
    await page.locator('#state', { hasText: 'completed' }).waitFor();
    expect(await transcriptText()).toContain('2 + 3 = 5');
    expect((await run.result()).transcript.find((message) => message['role'] === 'tool')?.['content']).toBe('5');
    await page.locator('#timeline tr[data-type=approval_decided]').waitFor();
  });

  it('a message sent from the page reaches the run', async ({ world }) => {
    const run = await world.client.start({ agent: 'gatekeeper', input: 'add 1 and 1' });
    await page.goto(runUrl(run.workflowId));
    await page.locator('#approvals li[data-tool-call-id=m1]').waitFor();
    await page.fill('#message-text', 'use metric units please');
    await page.click('form.message button');
    await page.locator('#notice', { hasText: 'Message sent' }).waitFor();
    await page.locator('#timeline tr[data-type=user_message_received]', { hasText: 'metric units' }).waitFor();
    await page.locator('#approvals button[data-action=approve]').click();
    await page.locator('#state', { hasText: 'completed' }).waitFor();
    // The model's next call carried it, and the conversation shows it.
    const sent = scripts.requests('gatekeeper').at(-1)!.messages;
    expect(sent.some((message) => message['role'] === 'user' && message['content'] === 'use metric units please')).toBe(
      true,
    );
    expect(await transcriptText()).toContain('use metric units please');
  });

  it('Abort ends a run as aborted, with a valid transcript', async ({ world }) => {
    const run = await world.client.start({ agent: 'writer', input: 'wait for two minutes' });
    await eventOf(run, 'tool_call_start');
    await page.goto(runUrl(run.workflowId));
    await page.fill('form.abort input[name=reason]', 'not needed any more');
    await page.click('form.abort button');
    await page.locator('#state', { hasText: 'aborted' }).waitFor();
    const result = await run.result();
    expect(result.status).toBe('aborted');
    expect(result.abort_reason).toBe('not needed any more');
    validateToolLinkage(result.transcript);
    await page.locator('#controls').waitFor({ state: 'hidden' });
  });

  it('Extend lets a run waiting for its budget go on', async ({ world }) => {
    const run = await world.client.start({
      agent: 'writer',
      input: 'wait a moment, then finish',
      budget: { max_llm_calls: 1, on_exhausted: 'ask' },
    });
    await page.goto(runUrl(run.workflowId));
    await page.locator('#overview .waiting', { hasText: 'Waiting for a budget extension' }).waitFor();
    expect(await page.locator('#overview').innerText()).toMatch(/Budget: llm calls\s+1 of 1/);
    await page.fill('form.extend input[name=llm_calls]', '2');
    await page.click('form.extend button');
    await page.locator('#notice', { hasText: 'Budget extended' }).waitFor();
    await page.locator('#state', { hasText: 'completed' }).waitFor();
    expect(await transcriptText()).toContain('done after the extension');
    await page.locator('#timeline tr[data-type=budget_extended]').waitFor();
  });

  it('a child run is reachable from its parent, and leads back to it', async () => {
    // The lead run the first test made: other files on this dev server run agents named 'lead' too.
    const parent = { workflow_id: ledWorkflowId! };
    await page.goto(runUrl(parent.workflow_id));
    const child = page.locator('#children a').first();
    await child.waitFor();
    const childId = await child.innerText();
    expect(await page.locator('#children').innerText()).toContain('clerk');
    await child.click();
    await page.waitForURL(runUrl(childId));
    expect(await page.locator('h1 .agent').innerText()).toBe('clerk');
    // A sub-agent's result leaves its transcript to its caller: it comes with the details.
    await detailsShown();
    expect(await transcriptText()).toContain('filed');
    await page.locator('.crumbs a', { hasText: parent.workflow_id }).click();
    await page.waitForURL(runUrl(parent.workflow_id));
    // The parent's timeline links the child too.
    expect(await page.locator('#timeline tr[data-type=subagent_started] a').getAttribute('href')).toBe(
      `/runs/${encodeURIComponent(childId)}`,
    );
  });

  it("a closed run's page comes from its description and result at once; its timeline follows, then is kept", async ({
    world,
  }) => {
    const run = await world.client.start({ agent: 'reporter', input: 'report once' });
    await run.result();
    const signedIn = { cookie: (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ') };
    // The server's first answer: the transcript (from the result), the state and figures, no timeline yet.
    const first = await (await fetch(runUrl(run.workflowId), { headers: signedIn })).text();
    expect(first).toContain('data-details="pending"');
    expect(first).toContain('Reading…');
    expect(first).not.toContain('data-type="react_end"');
    expect(first).toMatch(/<dt>Iterations<\/dt><dd>1<\/dd>/);
    expect(first).toContain('state-completed');
    // The details: every panel, the timeline with it.
    const details = (await (
      await fetch(`${runUrl(run.workflowId)}/details`, { headers: { ...signedIn, accept: 'application/json' } })
    ).json()) as Record<string, string>;
    expect(details['timeline']).toContain('data-type="react_end"');
    // The page had the transcript from the result: it is not sent again.
    expect(details['transcript']).toBeUndefined();
    expect(details['overview']).toMatch(/<dt>Model calls<\/dt><dd>1<\/dd>/);
    // Kept: the next answer is whole, with nothing left to read.
    const again = await (await fetch(runUrl(run.workflowId), { headers: signedIn })).text();
    expect(again).not.toContain('data-details');
    expect(again).toContain('data-type="react_end"');
    // In the browser, a closed run the console has not kept: the script reads its details after it shows.
    const other = await world.client.start({ agent: 'reporter', input: 'report again' });
    await other.result();
    await page.goto(runUrl(other.workflowId));
    await page.locator('#timeline tr[data-type=react_end]').waitFor();
    await detailsShown();
    expect(await transcriptText()).toContain('the second report');
    expect(await page.locator('.reading').count()).toBe(0);
  });

  describe('without the token', () => {
    let waiting: RunHandle;
    it.beforeAll(async ({ world }) => {
      waiting = await world.client.start({ agent: 'gatekeeper', input: 'add 4 and 4' });
      await awaitingApproval(waiting, ['s1']);
    });
    afterAll(async () => {
      await waiting.abort('test over');
    });

    /** A raw HTTP request, with whatever Host and headers a test gives (fetch would not send a foreign Host). */
    const raw = (
      path: string,
      options: { method?: string; headers?: Record<string, string>; body?: string; port?: number } = {},
    ) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const port = options.port ?? Number(new URL(consoleServer.url).port);
        const sent = httpRequest(
          { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: options.headers ?? {} },
          (response) => {
            let body = '';
            response.on('data', (part: Buffer) => (body += part.toString()));
            response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
          },
        );
        sent.on('error', reject);
        sent.end(options.body);
      });
    const host = () => new URL(consoleServer.url).host;
    const abortPath = () => `/api/runs/${encodeURIComponent(waiting.workflowId)}/abort`;
    const approvePath = () => `/api/runs/${encodeURIComponent(waiting.workflowId)}/approve`;
    const json = { 'content-type': 'application/json' };

    it('refuses every action: approve, reject, abort, message and extend-budget answer 401 and change nothing', async () => {
      for (const action of ['approve', 'reject', 'abort', 'message', 'extend-budget']) {
        const answer = await raw(`/api/runs/${encodeURIComponent(waiting.workflowId)}/${action}`, {
          method: 'POST',
          headers: { ...json, host: host(), origin: `http://${host()}` },
          body: JSON.stringify({ tool_call_id: 's1', content: 'hi', reason: 'x', tokens: 10 }),
        });
        expect([action, answer.status]).toEqual([action, 401]);
      }
      // A wrong token is no token; a GET, a form's content type or a foreign Host never get that far.
      expect(
        (
          await raw(abortPath(), {
            method: 'POST',
            headers: { ...json, host: host(), authorization: 'Bearer wrong-token-wrong-token' },
            body: '{}',
          })
        ).status,
      ).toBe(401);
      expect((await raw(abortPath(), { headers: { host: host(), authorization: `Bearer ${TOKEN}` } })).status).toBe(
        405,
      );
      expect(
        (
          await raw(abortPath(), {
            method: 'POST',
            headers: {
              host: host(),
              authorization: `Bearer ${TOKEN}`,
              'content-type': 'application/x-www-form-urlencoded',
            },
            body: 'reason=x',
          })
        ).status,
      ).toBe(415);
      // A browser's session cookie is not enough either: the request must come from the console's own pages.
      const [cookie] = await signedIn.cookies();
      const session = `${cookie!.name}=${cookie!.value}`;
      for (const origin of <Array<Record<string, string>>>[
        { origin: 'http://127.0.0.1:1' },
        { origin: 'null' },
        {},
        { 'sec-fetch-site': 'cross-site', origin: `http://${host()}` },
      ]) {
        const answer = await raw(abortPath(), {
          method: 'POST',
          headers: { ...json, host: host(), cookie: session, ...origin },
          body: '{}',
        });
        expect([origin, answer.status]).toEqual([origin, 403]);
      }
      const status = await waiting.status();
      expect(status.state).toBe('awaiting_approval');
      expect(status.abort_requested).toBe(false);
      expect(status.queued_user_messages).toBe(0);
    });

    it('refuses a request under a foreign Host name (DNS rebinding), even for reading', async () => {
      const foreign = await raw('/', { headers: { host: 'attacker.example' } });
      expect(foreign.status).toBe(421);
      expect(foreign.body).not.toContain(waiting.workflowId);
      const page = await raw(`/runs/${encodeURIComponent(waiting.workflowId)}`, {
        headers: { host: `attacker.example:${new URL(consoleServer.url).port}`, authorization: `Bearer ${TOKEN}` },
      });
      expect(page.status).toBe(421);
      expect((await raw('/', { headers: { host: host() } })).status).toBe(200);
    });

    it('refuses an action another site makes a signed-in browser send (same machine, other port)', async () => {
      // A page on another origin, in the browser that is signed in to the console.
      const evil: Server = createServer((_request, response) => {
        response.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><body>
<form id="f" method="post" action="${consoleServer.url}${abortPath()}" enctype="text/plain"><input name='{"reason":"csrf","x":"' value='"}'></form>
<script>
fetch(${JSON.stringify(`${consoleServer.url}${abortPath()}`)}, { method: 'POST', credentials: 'include', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: '{"reason":"csrf"}' })
  .finally(() => fetch(${JSON.stringify(`${consoleServer.url}${approvePath()}`)}, { method: 'POST', credentials: 'include', headers: { 'content-type': 'application/json' }, body: '{"tool_call_id":"s1"}' }).catch(() => undefined))
  .finally(() => { document.title = 'sent'; document.getElementById('f').submit(); });
</script></body>`);
      });
      await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
      const answers: number[] = [];
      const listener = (response: { url(): string; status(): number }) => {
        if (response.url().startsWith(`${consoleServer.url}/api/`)) answers.push(response.status());
      };
      page.on('response', listener);
      try {
        await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
        await eventually(() => (answers.length >= 2 ? true : undefined), 10_000, 'the cross-site requests');
      } finally {
        page.off('response', listener);
        await new Promise<void>((resolve) => evil.close(() => resolve()));
      }
      // The JSON one was preflighted and never sent; the others answered 403 or 415.
      expect(answers.every((status) => status === 403 || status === 415)).toBe(true);
      const status = await waiting.status();
      expect(status.abort_requested).toBe(false);
      expect(status.pending_approvals.map((entry) => entry.tool_call_id)).toEqual(['s1']);
    });

    it('shows pages to a browser that is not signed in, with every action disabled and no secret in them', async () => {
      const stranger = await browser.newContext();
      try {
        const strangerPage = await stranger.newPage();
        await strangerPage.goto(runUrl(waiting.workflowId));
        await strangerPage.locator('#approvals li[data-tool-call-id=s1]').waitFor();
        expect(await strangerPage.locator('#approvals button[data-action=approve]').isDisabled()).toBe(true);
        expect(await strangerPage.locator('form.abort button').isDisabled()).toBe(true);
        expect(await strangerPage.locator('.signin').first().innerText()).toContain('sign in');
        const html = await strangerPage.content();
        expect(html).not.toContain(TOKEN);
        expect(html).not.toMatch(/stream_token|PATCHLOOP_ENCRYPTION_KEY=/);
      } finally {
        await stranger.close();
      }
      expect(await page.context().cookies()).toEqual([
        expect.objectContaining({ name: 'patchloop_console', httpOnly: true, sameSite: 'Strict' }),
      ]);
      expect((await page.context().cookies())[0]!.value).not.toContain(TOKEN);
    });

    it('listening beyond loopback needs the token, for reading too', async ({ world }) => {
      const refused = await runCli(['console', '--host', '0.0.0.0', '--port', '0'], {
        TEMPORAL_ADDRESS: world.config.temporalAddress,
        PATCHLOOP_CONSOLE_TOKEN: '',
      });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('needs a token: set PATCHLOOP_CONSOLE_TOKEN');
      const open = await startConsole({
        client: world.client,
        host: '0.0.0.0',
        port: 0,
        access: { token: TOKEN, loopbackBind: false },
        temporalLink: () => null,
        states: LIST_STATUSES,
      });
      try {
        const port = Number(new URL(open.url).port);
        expect((await raw('/', { port, headers: { host: `localhost:${port}` } })).status).toBe(401);
        expect(
          (await raw(`/runs/${waiting.workflowId}`, { port, headers: { host: `192.0.2.1:${port}` } })).status,
        ).toBe(401);
        const allowed = await raw('/', {
          port,
          headers: { host: `192.0.2.1:${port}`, authorization: `Bearer ${TOKEN}` },
        });
        expect(allowed.status).toBe(200);
      } finally {
        await open.close();
      }
    });
  });

  it('a run no worker serves: its page comes at once, says so and what to start, and goes on once a worker does', async ({
    world,
  }) => {
    const queue = `console-unserved-${randomUUID()}`;
    const sentry = agents.find((agent) => agent.name === 'sentry')!;
    const worker = () =>
      spawnWorker({
        address: world.config.temporalAddress,
        taskQueue: queue,
        modelUrl: world.fake.url,
        agents: [sentry],
      });
    const first = await worker();
    const client = await clientOn(queue);
    try {
      const run = await client.start({ agent: 'sentry', input: 'add 6 and 7' });
      await awaitingApproval(run, ['n1']);
      await first.kill('SIGKILL');
      const since = Date.now();
      await page.goto(runUrl(run.workflowId));
      // Within a few seconds (a query waits 3 s for a worker); the bound is loose for a loaded machine.
      expect(Date.now() - since).toBeLessThan(20_000);
      const notice = await page.locator('#overview .unserved').innerText();
      expect(notice).toMatch(
        new RegExp(
          `^No worker serves this run now: none has answered a query of the run for \\d+ s on task queue ${queue}\\.`,
        ),
      );
      expect(notice).toContain(
        `Start one with npx patchloop worker --task-queue ${queue}; the page goes on once it answers.`,
      );
      // What needs no worker, and nothing that contradicts it.
      expect(await page.locator('#state').innerText()).toBe('awaiting_approval');
      expect(await page.locator('#approvals').innerText()).toBe(
        'Waiting for approval\n\nThe run waits for a decision, but no worker answers for it now: the calls it waits for show here once one does.',
      );
      // A message from the page is an update a worker applies: the page says none has, and what to start.
      await page.fill('#message-text', 'check it twice');
      await page.click('form.message button[type=submit]');
      await page.locator('#notice.waiting').waitFor({ timeout: 30_000 });
      expect(await page.locator('#notice').innerText()).toBe(
        `Sent, not applied yet: no worker has taken it within 5 s (task queue '${queue}'). It is applied once one does: start one with npx patchloop worker --task-queue ${queue}.`,
      );
      const second = await worker();
      try {
        const item = page.locator('#approvals li[data-tool-call-id="n1"]');
        await item.waitFor({ timeout: 60_000 });
        expect(await page.locator('#overview .unserved').count()).toBe(0);
        await item.locator('button.approve').click();
        expect((await run.result()).answer).toBe('6 + 7 = 13');
        // The message was applied once the worker came: the model read it.
        expect(scripts.requests('sentry').at(-1)!.messages.at(-1)).toEqual({ role: 'user', content: 'check it twice' });
        await page.locator('main[data-ended="true"]').waitFor();
        expect(await transcriptText()).toContain('6 + 7 = 13');
      } finally {
        await second.kill('SIGKILL');
      }
    } finally {
      await client.close();
    }
  });

  it("a failed chat turn shows its error in the console, show and chat, and keeps the user's message", async ({
    world,
  }) => {
    const env = { TEMPORAL_ADDRESS: world.config.temporalAddress, PATCHLOOP_TASK_QUEUE: world.config.taskQueue };
    const id = `console-chat-${randomUUID()}`;
    const kept = "(the message stays in the session's transcript; send another to go on)";
    const chat = await runCli(['chat', 'chatter', '--id', id], env, 'hello\nsomething flagged\n/quit\n');
    expect(chat.code, chat.stderr).toBe(0);
    expect(chat.stdout).toMatch(
      new RegExp(
        `assistant> \\(turn failed: ProviderRejected: [^\\n]*Your message was flagged by the content filter[^\\n]* ${escaped(kept)}\\)\n`,
      ),
    );
    await page.goto(runUrl(id));
    expect(await page.locator('#overview .turn-failed').innerText()).toMatch(
      new RegExp(`^The last turn failed: ProviderRejected: .*flagged by the content filter.* ${escaped(kept)}$`),
    );
    expect(await page.locator('#timeline tr.type-turn_failed').innerText()).toMatch(
      /turn failed: ProviderRejected: .*flagged by the content filter/,
    );
    expect(await transcriptText()).toContain('something flagged');
    const shown = await runCli(['show', id], env);
    expect(shown.stdout).toMatch(
      new RegExp(`\nlast turn failed: ProviderRejected: .*flagged by the content filter.* ${escaped(kept)}\n`),
    );
    expect(shown.stdout).toContain('\nuser      something flagged\n');
    // The next turn's request holds the message: the conversation as it was said, valid.
    const next = await runCli(['send', id, 'are you there?'], env);
    expect([next.code, JSON.parse(next.stdout).reply]).toEqual([0, 'still here']);
    expect(scripts.requests('chatter').at(-1)!.messages.slice(1)).toEqual([
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'hello!' },
      { role: 'user', content: 'something flagged' },
      { role: 'user', content: 'are you there?' },
    ]);
    // A turn that fails through send: its reply on stdout, its error on stderr, exit 1.
    const failed = await runCli(['send', id, 'flag this too'], env);
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout)).toMatchObject({
      workflow_id: id,
      status: 'failed',
      reply: null,
      turn: 4,
      error: { type: 'ProviderRejected', message: expect.stringContaining('This one was flagged too') },
    });
    expect(failed.stderr).toMatch(
      new RegExp(`^the turn failed: ProviderRejected: .*This one was flagged too.* ${escaped(kept)}\n$`),
    );
    await world.client.session(id).close();
  });

  it("shows an encrypted run in plaintext through the client's codec, with no key in the page", async ({
    startWorld,
  }) => {
    const secret = randomBytes(32).toString('base64');
    const encryption = { active: parseKey(secret, 'console-key'), previous: [] };
    const canary = `canary-${randomUUID()}`;
    const sealed = await startWorld({ config: { encryption }, fake: { script: [reply(`Noted: ${canary}`)] } });
    const sealedConsole = await startConsole({
      client: sealed.client,
      host: '127.0.0.1',
      port: 0,
      access: { token: TOKEN, loopbackBind: true },
      temporalLink: () => null,
      states: LIST_STATUSES,
    });
    try {
      const run = await sealed.client.start({ agent: 'assistant', input: `Remember ${canary}.` });
      await run.result();
      await page.goto(`${sealedConsole.url}/runs/${encodeURIComponent(run.workflowId)}`);
      await detailsShown();
      expect(await transcriptText()).toContain(`Noted: ${canary}`);
      expect(await transcriptText()).toContain(`Remember ${canary}.`);
      // The server's storage is read (the run's id is there in plain), and the canary is not in it.
      expect(occurrencesInDatabase(run.workflowId)).toBeGreaterThan(0);
      expect(occurrencesInDatabase(canary)).toBe(0);
      const html = await page.content();
      expect(html).not.toContain(secret);
      expect(html).not.toContain(TOKEN);
    } finally {
      await sealedConsole.close();
      await sealed.close();
    }
  });
});
