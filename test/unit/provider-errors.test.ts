import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { readErrorBody } from '../../src/activities/provider-error-body';
import {
  classifyAttempt,
  classifyProviderError,
  emptyReply,
  retryAfterMs,
  withoutVolatileParts,
} from '../../src/activities/provider-errors';

const apiError = (
  status: number,
  message = 'boom',
  headers: Record<string, string> = {},
  code?: string,
  type?: string,
) =>
  OpenAI.APIError.generate(
    status,
    { error: { message, ...(code ? { code } : {}), ...(type ? { type } : {}) } },
    message,
    new Headers(headers),
  );

describe('provider error classification', () => {
  it.each([
    [429, 'ProviderRateLimited', false],
    [500, 'ProviderUnavailable', false],
    [503, 'ProviderUnavailable', false],
    [408, 'ProviderUnavailable', false],
    [409, 'ProviderUnavailable', false],
    [400, 'ProviderRejected', true],
    [401, 'ProviderAuthFailed', true],
    [403, 'ProviderAuthFailed', true],
    [404, 'ProviderRejected', true],
    [422, 'ProviderRejected', true],
  ])('status %i is %s (non-retryable: %s)', (status, type, nonRetryable) => {
    const failure = classifyProviderError(apiError(status));
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure.type).toBe(type);
    expect(failure.nonRetryable).toBe(nonRetryable);
    expect(failure.message).toContain(`(${status})`);
  });

  it('recognizes a context overflow and honours retry-after on 429', () => {
    expect(classifyProviderError(apiError(400, 'too long', {}, 'context_length_exceeded')).type).toBe('ContextTooLong');
    expect(classifyProviderError(apiError(429, 'slow down', { 'retry-after': '3' })).nextRetryDelay).toBe(3000);
    expect(classifyProviderError(apiError(429, 'slow down', { 'retry-after-ms': '250' })).nextRetryDelay).toBe(250);
  });

  it('treats connection failures and broken streams as retryable', () => {
    const failure = classifyProviderError(new OpenAI.APIConnectionError({ message: 'Connection error.' }));
    expect(failure.type).toBe('ProviderUnavailable');
    expect(failure.nonRetryable).toBe(false);
    expect(classifyProviderError(new TypeError('terminated')).type).toBe('ProviderUnavailable');
  });

  it('fails at once on exhausted quota, which no retry can fix', () => {
    for (const failure of [
      classifyProviderError(apiError(429, 'You exceeded your current quota', {}, 'insufficient_quota')),
      classifyProviderError(apiError(429, 'quota', {}, undefined, 'insufficient_quota')),
    ]) {
      expect(failure.type).toBe('ProviderQuotaExceeded');
      expect(failure.nonRetryable).toBe(true);
    }
  });

  it('follows the provider’s x-should-retry verdict either way', () => {
    const stop = classifyProviderError(apiError(500, 'broken', { 'x-should-retry': 'false' }));
    expect([stop.type, stop.nonRetryable]).toEqual(['ProviderUnavailable', true]);
    expect(stop.message).toContain('x-should-retry: false');
    const retry = classifyProviderError(apiError(400, 'busy', { 'x-should-retry': 'true', 'retry-after-ms': '300' }));
    expect([retry.type, retry.nonRetryable, retry.nextRetryDelay]).toEqual(['ProviderUnavailable', false, 300]);
    // Quota exhaustion stays final even if a proxy says to retry.
    expect(
      classifyProviderError(apiError(429, 'quota', { 'x-should-retry': 'true' }, 'insufficient_quota')).nonRetryable,
    ).toBe(true);
  });

  it('classifies undecodable data as a retryable malformed reply', () => {
    const failure = classifyProviderError(new SyntaxError('Unexpected token t in JSON'));
    expect([failure.type, failure.nonRetryable]).toEqual(['ProviderMalformedReply', false]);
  });

  it('parses retry-after as seconds or an HTTP date', () => {
    expect(retryAfterMs({ 'retry-after': '2' })).toBe(2000);
    expect(retryAfterMs({ 'retry-after': new Date(10_000).toUTCString() }, 4_000)).toBe(6000);
    expect(retryAfterMs({ 'retry-after': 'soon' })).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });

  it('ignores empty, zero, negative and huge delays, which would hot-loop or stall the run', () => {
    const cases: Array<Record<string, string>> = [
      { 'retry-after': '' },
      { 'retry-after': '0' },
      { 'retry-after-ms': '' },
      { 'retry-after-ms': '0' },
      { 'retry-after': '-3' },
      { 'retry-after': '86400' },
    ];
    for (const headers of cases) {
      expect([headers, retryAfterMs(headers)]).toEqual([headers, undefined]);
    }
    expect(classifyProviderError(apiError(429, 'slow down', { 'retry-after': '0' })).nextRetryDelay).toBeUndefined();
  });

  it('classifies errors the provider sends inside a stream by their code and type', () => {
    const streamed = (error: Record<string, unknown>) => new OpenAI.APIError(undefined, error, undefined, undefined);
    const cases: Array<[Record<string, unknown>, string, boolean]> = [
      [{ message: 'quota', type: 'insufficient_quota', code: 'insufficient_quota' }, 'ProviderQuotaExceeded', true],
      [{ message: 'bad key', type: 'invalid_request_error', code: 'invalid_api_key' }, 'ProviderAuthFailed', true],
      [{ message: 'too long', type: 'invalid_request_error', code: 'context_length_exceeded' }, 'ContextTooLong', true],
      [{ message: 'flagged', type: 'invalid_request_error', code: 'content_filter' }, 'ProviderRejected', true],
      [{ message: 'overloaded', type: 'server_error' }, 'ProviderUnavailable', false],
    ];
    for (const [error, type, nonRetryable] of cases) {
      const failure = classifyProviderError(streamed(error));
      expect([error.message, failure.type, failure.nonRetryable]).toEqual([error.message, type, nonRetryable]);
    }
  });
});

describe('failures retrying cannot fix', () => {
  /** The attempts of one call: each classified with what the previous one recorded. */
  const attempts = (errors: unknown[]) => {
    let previous: ReturnType<typeof classifyAttempt>['record'] | undefined;
    return errors.map((error) => {
      const { failure, record } = classifyAttempt(error, previous);
      previous = record;
      return [failure.type, failure.nonRetryable];
    });
  };

  it('a 500 whose body is a validation error is a rejection at once, with the server message', () => {
    const body = "7 validation errors:\n  {'type': 'string_type', 'msg': 'Input should be a valid string'}";
    const { failure } = classifyAttempt(apiError(500, body), undefined);
    expect([failure.type, failure.nonRetryable]).toEqual(['ProviderRejected', true]);
    expect(failure.message).toContain('Input should be a valid string');
  });

  it('the same 500 five times in a row ends the call; a different one in between starts the count again', () => {
    const same = () => apiError(500, "'dict object' has no attribute 'content'");
    expect(attempts([same(), same(), same(), same(), same()])).toEqual([
      ['ProviderUnavailable', false],
      ['ProviderUnavailable', false],
      ['ProviderUnavailable', false],
      ['ProviderUnavailable', false],
      ['ProviderRejected', true],
    ]);
    expect(attempts([same(), same(), same(), same(), apiError(500, 'other'), same()]).at(-1)).toEqual([
      'ProviderUnavailable',
      false,
    ]);
  });

  it('gateways, overloads and errors the provider asks to retry are outages however often they repeat', () => {
    const outages = [
      ...[501, 502, 503, 504, 520, 522, 529].map((status) => () => apiError(status, 'busy')),
      () => apiError(500, 'busy', { 'x-should-retry': 'true' }),
      () => apiError(500, 'busy', { 'retry-after': '2' }),
    ];
    for (const outage of outages)
      expect(attempts(Array.from({ length: 8 }, outage)).at(-1)).toEqual(['ProviderUnavailable', false]);
  });

  it('an empty reply that says why (length, content_filter) fails at once, naming the reason', () => {
    for (const [reason, says] of [
      ['length', 'completion limit'],
      ['content_filter', 'content filter'],
    ] as const) {
      const { failure } = classifyAttempt(emptyReply(reason), undefined);
      expect([failure.type, failure.nonRetryable]).toEqual(['ProviderRejected', true]);
      expect(failure.message).toContain(says);
    }
  });

  it('an empty reply is retried, and the third in a row fails as ProviderEmptyReply', () => {
    expect(attempts([emptyReply(), emptyReply(), emptyReply()])).toEqual([
      ['ProviderStreamIncomplete', false],
      ['ProviderStreamIncomplete', false],
      ['ProviderEmptyReply', true],
    ]);
  });
});

/**
 * An HTTP error answer as the openai client makes it from the raw body (it keeps only a JSON body's
 * `error` field, or the text of a body that is not JSON), and the raw body the LLM phase keeps beside it.
 */
function answered(
  status: number,
  text: string,
  contentType = 'application/json',
  headers: Record<string, string> = {},
) {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const error = OpenAI.APIError.generate(
    status,
    json as Record<string, unknown> | undefined,
    json === undefined ? text : undefined,
    new Headers({ 'content-type': contentType, ...headers }),
  );
  return { error, body: { text, contentType } };
}

/** Each error body as the server's own code writes it; captured from the real server where one runs here. */
const BODIES = {
  /** OpenAI's 500. */
  openai:
    '{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}',
  /** llama-cpp-python 0.3.36, a null content (captured): pydantic's errors and a stack line in a 500. */
  llamaCpp: String.raw`{"error":{"message":"1 validation error:\n  {'type': 'int_parsing', 'loc': ('body', 'max_tokens'), 'msg': 'Input should be a valid integer, unable to parse string as an integer', 'input': 'lots'}\n\n  File \"/venv/lib/python3.11/site-packages/llama_cpp/server/app.py\", line 376, in create_chat_completion\n    POST /v1/chat/completions","type":"internal_server_error","param":null,"code":null}}`,
  /** LiteLLM 1.108.7 proxy, an unknown model (captured). */
  litellmModel:
    '{"error":{"message":"/chat/completions: Invalid model name passed in model=nope. Call `/v1/models` to view available models for your key.","type":"invalid_request_error","param":null,"code":"400","provider_specific_fields":{"error":"/chat/completions: Invalid model name passed in model=nope. Call `/v1/models` to view available models for your key."}}}',
  /** LiteLLM in front of llama-cpp-python, the upstream's validation error passed on as a 500 (captured). */
  litellmUpstream: String.raw`{"error":{"message":"litellm.InternalServerError: InternalServerError: OpenAIException - 1 validation error:\n  {'type': 'int_parsing', 'loc': ('body', 'max_tokens'), 'msg': 'Input should be a valid integer, unable to parse string as an integer', 'input': 'lots'}\n\n  File \"REDACTED\", line 376, in create_chat_completion\n    POST /v1/chat/completions\n\nLiteLLM: model group 'smollm2' failed with the error above. No fallback was attempted.","type":"internal_server_error","param":null,"code":"500"}}`,
  /** vLLM before `ErrorInfo` (`ErrorResponse` with `object: "error"`). */
  vllmOld:
    '{"object":"error","message":"This model\'s maximum context length is 2048 tokens. However, you requested 2100 tokens (2000 in the messages, 100 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}',
  /** vLLM since `ErrorResponse(error=ErrorInfo(...))`. */
  vllm: '{"error":{"message":"[{\'type\': \'missing\', \'loc\': (\'body\', \'messages\'), \'msg\': \'Field required\'}]","type":"BadRequestError","param":null,"code":400}}',
  /** Ollama's own endpoints (`api.StatusError`). */
  ollama: '{"error":"model \'llama3.2\' not found"}',
  /** Ollama's `/v1` endpoints (`openai.NewError`). */
  ollamaV1:
    '{"error":{"message":"model \\"llama3.2\\" not found, try pulling it first","type":"api_error","param":null,"code":null}}',
  /** FastAPI 0.165 with pydantic 2.14, a request validation error (captured). */
  fastapiValidation:
    '{"detail":[{"type":"missing","loc":["body","model"],"msg":"Field required","input":{"messages":[{"role":"assistant","content":null}]}},{"type":"string_type","loc":["body","messages",0,"content"],"msg":"Input should be a valid string","input":null}]}',
  /** FastAPI's `HTTPException(500, detail="upstream failed")` (captured). */
  fastapiDetail: '{"detail":"upstream failed"}',
  /** Starlette's unhandled exception (captured, text/plain). */
  starlette: 'Internal Server Error',
  /** nginx's gateway page. */
  nginx:
    '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n',
};

describe('error bodies of every server are read', () => {
  it.each([
    ['openai', BODIES.openai, '', 'The server had an error while processing your request. Sorry about that!', false],
    [
      'llama-cpp-python',
      BODIES.llamaCpp,
      '',
      "1 validation error: {'type': 'int_parsing', 'loc': ('body', 'max_tokens'), 'msg': 'Input should be a valid integer, unable to parse string as an integer', 'input': 'lots'} File \"/venv/lib/python3.11/site-packages/llama_cpp/server/app.py\", line 376, in create_chat_completion POST /v1/chat/completions",
      true,
    ],
    [
      'litellm',
      BODIES.litellmModel,
      '',
      '/chat/completions: Invalid model name passed in model=nope. Call `/v1/models` to view available models for your key.',
      true,
    ],
    [
      'vllm (object: error)',
      BODIES.vllmOld,
      '',
      "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2000 in the messages, 100 in the completion). Please reduce the length of the messages or completion.",
      true,
    ],
    ['ollama', BODIES.ollama, '', "model 'llama3.2' not found", false],
    ['ollama /v1', BODIES.ollamaV1, '', 'model "llama3.2" not found, try pulling it first', false],
    [
      'fastapi validation',
      BODIES.fastapiValidation,
      '',
      'body.model: Field required; body.messages.0.content: Input should be a valid string',
      true,
    ],
    ['fastapi detail', BODIES.fastapiDetail, '', 'upstream failed', false],
    ['plain text', BODIES.starlette, 'text/plain; charset=utf-8', 'Internal Server Error', false],
    ['html', BODIES.nginx, 'text/html', '502 Bad Gateway', false],
    [
      'html without a title',
      '<html><body><h1>Oops</h1><p>It broke &amp; stayed broken.</p></body></html>',
      'text/html',
      'Oops It broke & stayed broken.',
      false,
    ],
    ['an empty body', '', 'application/json', '(no body)', false],
    ['JSON of no known shape', '{"status":"down"}', 'application/json', '{"status":"down"}', false],
    ['a body that says JSON but is not', 'upstream exploded', 'application/json', 'upstream exploded', false],
  ])('%s', (_server, text, contentType, message, validation) => {
    expect(readErrorBody({ text, contentType: contentType || 'application/json' })).toMatchObject({
      message,
      validation,
    });
  });

  it('keeps type and code, and bounds a huge page to one line of 2,000 characters', () => {
    expect(readErrorBody({ text: BODIES.litellmModel, contentType: 'application/json' })).toMatchObject({
      type: 'invalid_request_error',
      code: '400',
    });
    const page = readErrorBody({ text: `<pre>${'trace line\n'.repeat(5000)}</pre>`, contentType: 'text/html' });
    expect(page.message).toHaveLength(2000);
    expect(page.message).not.toContain('\n');
  });

  it("classifies each server's answer by what its body says", () => {
    const cases: Array<[ReturnType<typeof answered>, string, boolean, string]> = [
      [answered(500, BODIES.openai), 'ProviderUnavailable', false, 'provider error (500): The server had an error'],
      [
        answered(500, BODIES.llamaCpp),
        'ProviderRejected',
        true,
        'provider rejected the request (500, a validation error',
      ],
      [answered(500, BODIES.litellmUpstream), 'ProviderRejected', true, 'OpenAIException - 1 validation error'],
      [
        answered(400, BODIES.litellmModel),
        'ProviderRejected',
        true,
        'provider rejected the request (400): /chat/completions: Invalid model name',
      ],
      [answered(400, BODIES.vllmOld), 'ContextTooLong', true, 'maximum context length is 2048 tokens'],
      [
        answered(500, BODIES.vllm),
        'ProviderRejected',
        true,
        "(500, a validation error: retrying cannot help): [{'type': 'missing'",
      ],
      [
        answered(404, BODIES.ollama),
        'ProviderRejected',
        true,
        "provider rejected the request (404): model 'llama3.2' not found.",
      ],
      [
        answered(500, BODIES.fastapiValidation),
        'ProviderRejected',
        true,
        '(500, a validation error: retrying cannot help): body.model: Field required; body.messages.0.content: Input should be a valid string.',
      ],
      [answered(500, BODIES.fastapiDetail), 'ProviderUnavailable', false, 'provider error (500): upstream failed'],
      [
        answered(500, BODIES.starlette, 'text/plain; charset=utf-8'),
        'ProviderUnavailable',
        false,
        'provider error (500): Internal Server Error',
      ],
      [answered(502, BODIES.nginx, 'text/html'), 'ProviderUnavailable', false, 'provider error (502): 502 Bad Gateway'],
    ];
    for (const [{ error, body }, type, nonRetryable, says] of cases) {
      const failure = classifyProviderError(error, body);
      expect([body.text, failure.type, failure.nonRetryable]).toEqual([body.text, type, nonRetryable]);
      expect(failure.message).toContain(says);
    }
  });

  it('without the raw body, reads what the openai client kept of it', () => {
    const { error } = answered(404, BODIES.ollama);
    expect(classifyProviderError(error).message).toBe(
      "provider rejected the request (404): model 'llama3.2' not found. Check the model name (PATCHLOOP_MODEL or the agent's model) and OPENAI_BASE_URL.",
    );
  });
});

describe('5xx answers that change on every try', () => {
  /** The attempts of one call at these times (seconds): each classified with what the previous one recorded. */
  const attemptsAt = (answers: Array<[number, ReturnType<typeof answered> | { error: unknown; body?: undefined }]>) => {
    let previous: ReturnType<typeof classifyAttempt>['record'] | undefined;
    return answers.map(([second, { error, body }]) => {
      const outcome = classifyAttempt(error, previous, { body, serverErrorSeconds: 300, now: second * 1000 });
      previous = outcome.record;
      return outcome;
    });
  };
  const withId = (id: string) =>
    answered(500, JSON.stringify({ detail: `upstream failed (request id ${id}, at 2026-12-06T08:0${id.length}:00Z)` }));
  /** Bodies that differ in words, not just in ids: no two count as the same answer. */
  const crash = (word: string) => answered(500, `worker crashed in the ${word} stage`, 'text/plain');

  it('ids and timestamps are masked: five answers that differ only there are the same answer', () => {
    expect(withoutVolatileParts('upstream failed (request id req_8f3a1c, at 2026-12-06T08:01:02.123Z)')).toBe(
      withoutVolatileParts('upstream failed (request id req_99b0e7, at 2026-12-06T09:41:12.007Z)'),
    );
    const outcomes = attemptsAt(['a1', 'b22', 'c333', 'd4444', 'e55555'].map((id, n) => [n * 4, withId(id)]));
    expect(outcomes.map(({ failure }) => [failure.type, failure.nonRetryable])).toEqual([
      ['ProviderUnavailable', false],
      ['ProviderUnavailable', false],
      ['ProviderUnavailable', false],
      ['ProviderUnavailable', false],
      ['ProviderRejected', true],
    ]);
  });

  it('500s that never repeat end the call llm_server_error_seconds after the first, with no progress between', () => {
    const outcomes = attemptsAt([
      [0, crash('parse')],
      [100, crash('sample')],
      [299, crash('decode')],
      [300, crash('render')],
    ]);
    expect(outcomes.map(({ failure }) => [failure.type, failure.nonRetryable])).toEqual([
      ['ProviderUnavailable', false],
      ['ProviderUnavailable', false],
      ['ProviderUnavailable', false],
      ['ProviderUnavailable', true],
    ]);
    expect(outcomes[0]!.record.server_errors_since).toBe('1970-01-01T00:00:00.000Z');
    expect(outcomes.at(-1)!.failure.message).toBe(
      'provider error (500): worker crashed in the render stage (nothing but 5xx answers and failed connections for 300 s or more, the limit llm_server_error_seconds: retrying stopped)',
    );
  });

  it('outages and failed connections between them are no progress; a reply or a 429 starts the count again', () => {
    const refused = { error: new OpenAI.APIConnectionError({ message: 'Connection error.' }) };
    const stalled = attemptsAt([
      [0, crash('parse')],
      [100, answered(503, '{"error":{"message":"overloaded"}}')],
      [200, refused],
      [300, crash('render')],
    ]);
    expect(stalled.at(-1)!.failure.nonRetryable).toBe(true);
    const progressed = attemptsAt([
      [0, crash('parse')],
      [100, answered(429, '{"error":{"message":"slow down"}}')],
      [300, crash('render')],
      [599, crash('decode')],
    ]);
    expect(progressed.map(({ failure }) => failure.nonRetryable)).toEqual([false, false, false, false]);
    expect(progressed.at(-1)!.record.server_errors_since).toBe(new Date(300_000).toISOString());
    const broken = attemptsAt([
      [0, crash('parse')],
      [100, { error: emptyReply() }],
      [300, crash('render')],
    ]);
    expect(broken.at(-1)!.failure.nonRetryable).toBe(false);
  });

  it('an outage alone (503s, gateways) is never ended by it: the retry budget bounds those', () => {
    const outage = attemptsAt(
      Array.from({ length: 30 }, (_, n) => [n * 60, answered(503, `{"error":{"message":"busy ${'x'.repeat(n)}"}}`)]),
    );
    expect(outage.every(({ failure }) => !failure.nonRetryable)).toBe(true);
  });
});
