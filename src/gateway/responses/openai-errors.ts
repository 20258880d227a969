import type { Response } from 'express';
import type { Refuse } from '../gateway';

/** OpenAI's error types, by HTTP status, as its clients map them to exceptions. */
function typeOf(status: number): string {
  if (status === 401) return 'invalid_api_key';
  if (status === 404) return 'invalid_request_error';
  if (status === 429) return 'rate_limit_exceeded';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** Answers in OpenAI's error shape: `{"error": {"message", "type", "param", "code"}}`. */
export function openaiError(
  response: Response,
  status: number,
  message: string,
  details: { param?: string | null; code?: string | null } = {},
): void {
  response
    .status(status)
    .json({ error: { message, type: typeOf(status), param: details.param ?? null, code: details.code ?? null } });
}

/** The gateway's refusals (a missing or wrong key, a limit) in OpenAI's shape. */
export const refuseOpenai: Refuse = (response, status, message) =>
  openaiError(response, status, message, { code: status === 401 ? 'invalid_api_key' : 'rate_limit_exceeded' });
