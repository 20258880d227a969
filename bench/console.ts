/**
 * `npm run bench:console`: how fast the console opens a long run. A run of BENCH_ITERATIONS iterations
 * (default 1,000: one `add` call each, continuing as new along the way) is made on a dev server, then
 * its page is opened: by HTTP (the server's whole answer, BENCH_REPEATS times) and in a real browser
 * (Debian's Chromium through playwright-core: navigation until the page has loaded, its script run and
 * its live feed open), while it waits and once it has ended (first opens, and once the console keeps it).
 * Prints the figures; the goal is under a second.
 */
import { performance } from 'node:perf_hooks';
import { LIST_STATUSES } from '../src/cli/syntax';
import { startConsole } from '../src/console/server';
import type { ChatRequestBody } from '../src/fake-model/server';
import { callTools, reply } from '../src/fake-model/steps';
import { addTool, waitTool } from '../src/tools/examples';
import type { Page } from 'playwright-core';
import { launchBrowser } from '../support/browser';
import { median, table } from './report';
import { startBenchWorld } from './world';

const ITERATIONS = Number(process.env['BENCH_ITERATIONS'] ?? 1000);
const REPEATS = Number(process.env['BENCH_REPEATS'] ?? 5);
const TOKEN = 'bench-console-token-0123456789';

const toolResults = (body: ChatRequestBody) => body.messages.filter((message) => message['role'] === 'tool').length;

type PageGlobals = { document: { querySelectorAll(selector: string): { length: number } } };

const ms = (values: number[]) => [median(values), Math.max(...values)].map((value) => value.toFixed(0));

/** Opens the page `repeats` times by HTTP and (with `inBrowser`) as many times in the browser. */
async function measure(url: string, page: Page, repeats: number, inBrowser = true) {
  const server: number[] = [];
  let bytes = 0;
  for (let attempt = 0; attempt < repeats; attempt += 1) {
    const at = performance.now();
    const response = await fetch(url);
    const text = await response.text();
    server.push(performance.now() - at);
    bytes = text.length;
    if (!response.ok) throw new Error(`the console answered ${response.status}`);
  }
  const browser: number[] = [];
  let shown = { messages: 0, events: 0 };
  for (let attempt = 0; inBrowser && attempt < repeats; attempt += 1) {
    const at = performance.now();
    await page.goto(url, { waitUntil: 'load' });
    browser.push(performance.now() - at);
    shown = await page.evaluate(() => {
      const globals = globalThis as unknown as PageGlobals;
      return {
        messages: globals.document.querySelectorAll('#transcript li.message').length,
        events: globals.document.querySelectorAll('#timeline tr').length,
      };
    });
  }
  return { server, browser, bytes, shown };
}

async function main(): Promise<void> {
  const world = await startBenchWorld(
    (body) => {
      const done = toolResults(body);
      if (done > ITERATIONS) return reply(`done after ${done - 1} additions`);
      if (done === ITERATIONS)
        return callTools([{ id: `call_${done}`, name: 'wait', arguments: JSON.stringify({ seconds: 0 }) }]);
      return callTools([{ id: `call_${done}`, name: 'add', arguments: JSON.stringify({ a: done, b: 1 }) }]);
    },
    {
      agents: [
        {
          name: 'counter',
          instructions: 'You count by adding one, again and again, then wait for a person.',
          tools: ['add', 'wait'],
          needs_approval: ['wait'],
        },
      ],
      tools: [addTool, waitTool],
      keepBodies: false,
    },
  );
  const browser = await launchBrowser();
  const consoleServer = await startConsole({
    client: world.client,
    host: '127.0.0.1',
    port: 0,
    access: { token: TOKEN, loopbackBind: true },
    temporalLink: () => null,
    states: LIST_STATUSES,
  });
  const page = await browser.newPage();
  page.setDefaultTimeout(300_000);
  try {
    const started = performance.now();
    const run = await world.client.start({ agent: 'counter', input: `Add one, ${ITERATIONS} times, then wait.` });
    while ((await run.status().catch(() => null))?.pending_approvals.length !== 1)
      await new Promise((resolve) => setTimeout(resolve, 500));
    const status = await run.status();
    console.log(
      `run: ${status.iteration} iterations, ${status.tool_calls} tool calls in ${((performance.now() - started) / 1000).toFixed(1)} s; now waiting for approval`,
    );
    const url = `${consoleServer.url}/runs/${encodeURIComponent(run.workflowId)}`;
    const rows: string[][] = [];
    const open = await measure(url, page, REPEATS);
    rows.push(['waiting run: server, the whole HTML answer', ...ms(open.server)]);
    rows.push(['waiting run: browser, navigation to the load event', ...ms(open.browser)]);
    console.log(
      `page: ${(open.bytes / 1024).toFixed(0)} KB of HTML; ${open.shown.messages} messages and ${open.shown.events} events shown`,
    );

    // The same run once it has ended. A closed workflow is no longer cached: each query replays its
    // history on a worker. Its page comes from its description and recorded result (until its details
    // are read, every open is a first one); the details (status, timeline) follow, read once and kept.
    await run.approve(`call_${ITERATIONS}`);
    await run.result();
    const closed = await measure(url, page, REPEATS, false);
    rows.push(['closed run, first opens: server, description and result', ...ms(closed.server)]);
    const at = performance.now();
    await page.goto(url, { waitUntil: 'load' });
    const loaded = performance.now() - at;
    await page.locator('#timeline tr').first().waitFor();
    const detailed = performance.now() - at;
    rows.push(['closed run, first open: browser, navigation to the load event', ...ms([loaded])]);
    rows.push(['closed run, first open: browser, until its timeline is shown (replay)', ...ms([detailed])]);
    const again = await measure(url, page, REPEATS);
    rows.push(['closed run, kept: server', ...ms(again.server)]);
    rows.push(['closed run, kept: browser, navigation to the load event', ...ms(again.browser)]);
    console.log(table(['opening the run page', 'median ms', 'max ms'], rows));
    console.log(
      `closed page: ${(closed.bytes / 1024).toFixed(0)} KB of HTML at first, ${(again.bytes / 1024).toFixed(0)} KB once kept (${again.shown.messages} messages and ${again.shown.events} events shown)`,
    );
    const worst = Math.max(
      ...open.browser,
      ...open.server,
      ...closed.server,
      loaded,
      ...again.server,
      ...again.browser,
    );
    console.log(
      worst < 1000
        ? `a run of ${ITERATIONS} iterations, waiting or closed, opens in under a second (worst ${worst.toFixed(0)} ms; a closed run's timeline follows in ${(detailed / 1000).toFixed(1)} s the first time)`
        : `SLOW: ${worst.toFixed(0)} ms`,
    );
    if (worst >= 1000) process.exitCode = 1;
  } finally {
    await browser.close();
    await consoleServer.close();
    await world.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
