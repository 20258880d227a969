import type { Response } from 'express';
import type { ServerCallContext, User } from '@a2a-js/sdk/server';
import type { Principal } from '../principal';

/** Which A2A binding a request came by: each answers errors in its own shape. */
export type Binding = 'JSONRPC' | 'HTTP+JSON';

/**
 * The caller of an A2A request, as the SDK hands it to the request handler (its `User`): the principal
 * its key stands for, and a signal that stops what the request started (a stream) when the client goes.
 */
export class Caller implements User {
  readonly gone: AbortSignal;

  constructor(
    readonly principal: Principal,
    readonly binding: Binding,
    readonly response: Response,
  ) {
    const gone = new AbortController();
    response.once('close', () => gone.abort());
    this.gone = gone.signal;
  }

  get isAuthenticated(): boolean {
    return true;
  }

  get userName(): string {
    return this.principal.name;
  }
}

/** The caller of a request the gateway authenticated (every A2A route but the card). */
export function callerOf(context: ServerCallContext): Caller {
  const user = context.user;
  if (!(user instanceof Caller)) throw new Error('an A2A request reached the handler without authentication');
  return user;
}
