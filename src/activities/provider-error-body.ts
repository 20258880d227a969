/**
 * What an error answer of a model server says, whatever its shape. The openai client keeps only the
 * `error` field of a JSON body (`{"detail": ...}` becomes "status code (no body)"), so the LLM phase
 * keeps the raw body (`BodyObserver`) and reads it here. The shapes, as the servers' own code writes
 * them:
 *
 * - OpenAI, LiteLLM's proxy (`ProxyException.to_dict()` under `error`, its `code` the HTTP status as a
 *   string), vLLM since its `ErrorResponse(error=ErrorInfo(...))`, Ollama's `/v1` endpoints
 *   (`openai.NewError`) and llama-cpp-python (`{"error": {"message": str(exc), "type":
 *   "internal_server_error"}}` with a 500): `{"error": {"message", "type", "param", "code"}}`;
 * - vLLM before that: `{"object": "error", "message", "type": "BadRequestError", "param", "code": 400}`;
 * - Ollama's own endpoints (`api.StatusError`): `{"error": "model 'x' not found"}`, a string;
 * - FastAPI: `{"detail": [{"type", "loc", "msg", "input"}]}` for a request validation error (pydantic
 *   v2; v1 has no `input`), `{"detail": "text"}` for an `HTTPException`;
 * - Starlette's unhandled exception: `Internal Server Error` as text/plain; proxies' gateway pages
 *   (nginx's `<html><head><title>502 Bad Gateway</title>...`) as HTML.
 *
 * Anything else is shown as its text, bounded.
 */

/** An HTTP error answer's body as it came, and its content type. */
export interface ErrorBody {
  text: string;
  contentType: string;
}

/** What a body says. */
export interface ErrorReading {
  /** The server's message on one line, at most `MAX_MESSAGE_CHARS` characters. */
  message: string;
  /** The error's `type` and `code` where the body names them (OpenAI's, vLLM's, LiteLLM's shapes). */
  type?: string;
  code?: string;
  /**
   * The body says the request itself is wrong: FastAPI's list of validation errors, a `code` of 400 or
   * 422 or a type of a bad request (`invalid_request_error`, vLLM's `BadRequestError`), or a message in
   * the words of a validation error (pydantic's, a chat template's). Sending it again cannot help.
   */
  validation: boolean;
}

/** The longest message kept from a body: a failure message, not a copy of the server's page. */
const MAX_MESSAGE_CHARS = 2000;

/**
 * Validation errors in words: pydantic's (`1 validation error for X`, llama-cpp-python's `7 validation
 * errors:`, v2's `Input should be`, v1's `field required`), jsonschema's, and chat template errors
 * (LiteLLM's and llama.cpp's Jinja).
 */
const VALIDATION_MESSAGE =
  /\d+ validation errors?\b|validation errors? for|input should be|field required|unprocessable|is not of type|extra inputs are not permitted|jinja|template error/i;

/** Error types and codes that say the request is invalid, as OpenAI, vLLM, LiteLLM and FastAPI name them. */
const INVALID_REQUEST_TYPE =
  /^(invalid_request_error|badrequesterror|unprocessableentityerror|requestvalidationerror)$/i;

/** Reads a raw error body: JSON of any of the shapes above, HTML, or plain text. */
export function readErrorBody({ text, contentType }: ErrorBody): ErrorReading {
  const trimmed = text.trim();
  if (trimmed === '') return { message: '(no body)', validation: false };
  if (/json/i.test(contentType) || /^[[{"]/.test(trimmed)) {
    try {
      return readErrorValue(JSON.parse(trimmed));
    } catch {
      // Not JSON after all: read as text.
    }
  }
  const html = /html/i.test(contentType) || /^<(!doctype|html|head|body)\b/i.test(trimmed);
  return reading(html ? htmlText(trimmed) : trimmed);
}

/** Reads an error already parsed from JSON (a body, or the `error` of a streamed event). */
export function readErrorValue(value: unknown): ErrorReading {
  if (typeof value === 'string') return reading(value);
  if (Array.isArray(value)) return listReading(value);
  if (value === null || typeof value !== 'object') return reading(JSON.stringify(value) ?? String(value));
  const body = value as Record<string, unknown>;
  const error = body['error'];
  if ((typeof error === 'string' && error.trim() !== '') || isObject(error)) return readErrorValue(error);
  const detail = body['detail'];
  if (typeof detail === 'string' || Array.isArray(detail) || isObject(detail)) return readErrorValue(detail);
  const text = [body['message'], body['msg']].find((field) => typeof field === 'string') as string | undefined;
  const type = typeof body['type'] === 'string' ? body['type'] : undefined;
  const code = typeof body['code'] === 'string' || typeof body['code'] === 'number' ? String(body['code']) : undefined;
  const read = reading(text ?? JSON.stringify(body));
  const invalid = (type !== undefined && INVALID_REQUEST_TYPE.test(type)) || code === '400' || code === '422';
  return { ...read, ...(type ? { type } : {}), ...(code ? { code } : {}), validation: read.validation || invalid };
}

/** FastAPI's validation errors (`loc` and `msg` each), or any other list read item by item. */
function listReading(items: unknown[]): ErrorReading {
  const fields = items.filter(
    (item): item is { loc: unknown[]; msg: string } =>
      isObject(item) && Array.isArray(item['loc']) && typeof item['msg'] === 'string',
  );
  if (items.length > 0 && fields.length === items.length) {
    const text = fields.map((item) => `${item.loc.map(String).join('.')}: ${item.msg}`).join('; ');
    return { message: bounded(text), validation: true };
  }
  const readings = items.map(readErrorValue);
  return {
    message: bounded(readings.map((read) => read.message).join('; ') || '[]'),
    validation: readings.some((read) => read.validation),
  };
}

function reading(text: string): ErrorReading {
  const message = bounded(text);
  return { message: message === '' ? '(no body)' : message, validation: VALIDATION_MESSAGE.test(message) };
}

/** One line, bounded. */
function bounded(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= MAX_MESSAGE_CHARS ? line : `${line.slice(0, MAX_MESSAGE_CHARS - 1)}…`;
}

/** An HTML page's title, else its text without tags (a gateway's error page). */
function htmlText(html: string): string {
  const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html)?.[1];
  const text =
    title && title.trim() !== ''
      ? title
      : html.replace(/<(script|style)\b[\s\S]*?<\/\1>/gi, ' ').replace(/<[^>]*>/g, ' ');
  return text
    .replace(/&nbsp;/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
