import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { freePort } from '../../src/worker/free-port';
import type { RunHandle } from '../../src/client/patchloop-client';
import { runCli, startCliWorker } from '../support/cli';
import { clientOn } from '../support/temporal';
import { eventOf, eventually } from '../support/wait';

interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Record<string, unknown>;
}

let receiver: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => (receiver ? receiver.close(resolve) : resolve(undefined)));
  receiver = undefined;
});

/** An OTLP/HTTP receiver (JSON encoding): the spans exporters send to /v1/traces. */
async function otlpReceiver(): Promise<{ url: string; spans: ReceivedSpan[] }> {
  const spans: ReceivedSpan[] = [];
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<Record<string, unknown>> }> }>;
        };
        for (const resource of body.resourceSpans)
          for (const scope of resource.scopeSpans)
            for (const span of scope.spans) {
              const attributes = Object.fromEntries(
                ((span['attributes'] ?? []) as Array<{ key: string; value: Record<string, unknown> }>).map(
                  ({ key, value }) => [key, Object.values(value)[0]],
                ),
              );
              spans.push({
                name: String(span['name']),
                traceId: String(span['traceId']),
                spanId: String(span['spanId']),
                ...(span['parentSpanId'] ? { parentSpanId: String(span['parentSpanId']) } : {}),
                attributes,
              });
            }
      }
      response.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => receiver!.listen(port, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${port}`, spans };
}

describe('tracing over OTLP', () => {
  it('workflow and activity spans, with GenAI spans for the model call and each tool call beneath them', async ({
    startWorld,
  }) => {
    const world = await startWorld();
    const otlp = await otlpReceiver();
    const env = {
      TEMPORAL_ADDRESS: world.config.temporalAddress,
      PATCHLOOP_TASK_QUEUE: `traced-${Date.now()}`,
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_SERVICE_NAME: 'patchloop-test',
    };
    // Given the run's shared bundle, built without tracing: the worker bundles for itself instead, so
    // the tracing plugin's workflow interceptors are in its bundle, and says so.
    const worker = await startCliWorker(['--fake-model'], { ...env, OPENAI_API_KEY: '', OPENAI_BASE_URL: '' });
    expect(worker.output()).toContain('built without tracing, which this worker has');
    const client = await clientOn(env.PATCHLOOP_TASK_QUEUE);
    let interrupted: RunHandle;
    try {
      const run = await runCli(['run', 'assistant', 'add', '2', 'and', '3', '--follow'], env);
      expect(run.code, run.stderr).toBe(0);
      // A user message while a tool runs: the next request is not only what this worker returned.
      interrupted = await client.start({ agent: 'assistant', input: 'wait 1 s' });
      await eventOf(interrupted, 'tool_call_start');
      await interrupted.sendUserMessage('and now?');
      expect((await interrupted.result()).answer).toBe('You said: and now?');
    } finally {
      await worker.stop();
      await client.close();
    }
    // The worker flushes its spans when it stops.
    const spans = await eventually(
      () => (otlp.spans.some((span) => span.name.startsWith('execute_tool')) ? otlp.spans : undefined),
      30_000,
      `spans\n${worker.output()}`,
    );
    const byId = new Map(spans.map((span) => [span.spanId, span]));
    const interruptedTrace = spans.find((span) =>
      JSON.stringify(span.attributes).includes(interrupted.workflowId),
    )?.traceId;
    expect(interruptedTrace).toBeDefined();
    const allChats = spans.filter((span) => span.name === 'chat patchloop-demo-model');
    const chats = allChats.filter((span) => span.traceId !== interruptedTrace);
    expect(chats).toHaveLength(2);
    for (const chat of chats) {
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'patchloop-demo-model',
      });
      expect(Number(chat.attributes['gen_ai.usage.input_tokens'])).toBeGreaterThan(0);
      expect(Number(chat.attributes['gen_ai.usage.output_tokens'])).toBeGreaterThan(0);
      // Beneath the activity's span (Temporal's interceptor), in the workflow's trace.
      expect(byId.get(chat.parentSpanId!)?.name).toBe('RunActivity:llmPhase');
    }
    // The first call reads the whole request from the workflow. The second is the first plus the reply
    // and the tool result this worker returned: predicted, nothing read.
    const loads = (list: typeof spans) =>
      list.map((chat) => ({
        chars: Number(chat.attributes['patchloop.request.chars']),
        read: Number(chat.attributes['patchloop.request.chars_read']),
        source: chat.attributes['patchloop.request.source'],
      }));
    const [first, second] = loads(chats);
    expect(first).toMatchObject({ source: 'query', read: first!.chars });
    expect(second!.chars).toBeGreaterThan(first!.chars);
    expect(second).toMatchObject({ source: 'predicted', read: 0 });
    // With a user message folded in, the query reads only what follows the held request's messages: the
    // tool call, its result, the message and the request's tail, not the system prompt and the first
    // user message again.
    const [before, after] = loads(allChats.filter((span) => span.traceId === interruptedTrace));
    expect(before).toMatchObject({ source: 'query', read: before!.chars });
    expect(after!.source).toBe('query');
    expect(after!.read).toBeGreaterThan(0);
    expect(after!.read).toBeLessThan(after!.chars - before!.chars + before!.chars / 2);
    const tool = spans.find((span) => span.name === 'execute_tool add')!;
    expect(tool.attributes).toMatchObject({ 'gen_ai.tool.name': 'add', 'gen_ai.operation.name': 'execute_tool' });
    expect(String(tool.attributes['gen_ai.tool.call.id'])).toMatch(/^call_/);
    // A fast tool runs in the model call's activity, after the model's reply (its `chat` span ended).
    expect(byId.get(tool.parentSpanId!)?.name).toBe('RunActivity:llmPhase');
    expect(new Set(spans.map((span) => span.traceId)).size).toBeGreaterThanOrEqual(1);
    expect(spans.some((span) => span.name === 'RunWorkflow:agentRun')).toBe(true);
    // One span per operation: nothing duplicated (replays report no spans).
    expect(new Set(spans.map((span) => span.spanId)).size).toBe(spans.length);
    // No prompt text in any attribute.
    expect(JSON.stringify(spans)).not.toContain('add 2 and 3');
  });
});
