import type { AddressInfo } from 'node:net';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { PatchloopClient } from '../client/patchloop-client';
import type { AgentDefinitionInput } from '../runtime';
import { mountA2a } from './a2a/mount';
import { mountAgui } from './ag-ui/mount';
import { mountMcp } from './mcp/mount';
import { KeyRing } from './keys';
import type { Principal } from './principal';
import { PrincipalRuns } from './principal-runs';
import type { PrincipalLimits } from './rate-limits';
import { RateLimited, retryAfter } from './rate-limits';
import { mountResponses } from './responses/routes';

export interface GatewayOptions {
  client: PatchloopClient;
  /** The keys file (`patchloop keys create` writes it): read again when it changes. */
  keysFile: string;
  /** The agents callers may name (the worker's agents file, or the example agents). */
  agents: AgentDefinitionInput[];
  limits?: Partial<PrincipalLimits>;
  /**
   * Host names `/mcp` answers to besides loopback ones when the gateway listens on a loopback address
   * (a reverse proxy's public name): DNS-rebinding protection, docs/mcp-server.md.
   */
  allowedHosts?: string[];
  /** Where the gateway's own lines go (a start, a refused request); stderr by default. */
  log?: (line: string) => void;
}

/** What each protocol's routes get: the agents, the runs scoped to principals, and who is calling. */
export interface GatewayContext {
  agents: ReadonlyMap<string, AgentDefinitionInput>;
  runs: PrincipalRuns;
  keys: KeyRing;
  log: (line: string) => void;
}

/** The largest request body a gateway route reads (an A2A message with its parts, a Responses request). */
export const GATEWAY_MAX_BODY_BYTES = 1024 * 1024;

/** How a protocol answers a refused request (no key, a wrong one, over a limit): its own error shape. */
export type Refuse = (response: Response, status: 401 | 429, message: string) => void;

/** The principal `authenticate` found for this request. */
export function principalOf(response: Response): Principal {
  const principal = (response.locals as { principal?: Principal }).principal;
  if (!principal) throw new Error('principalOf called on a route without authenticate');
  return principal;
}

/**
 * Middleware: the caller's principal from `Authorization: Bearer KEY`, or a 401 in the protocol's shape
 * (with `WWW-Authenticate: Bearer`). A refused request changes nothing.
 */
export function authenticate(keys: KeyRing, refuse: Refuse) {
  return (request: Request, response: Response, next: NextFunction): void => {
    const header = request.get('authorization') ?? '';
    const key = /^Bearer\s+(\S+)$/i.exec(header)?.[1];
    const principal = key ? keys.principalOf(key) : undefined;
    if (!principal) {
      response.set('WWW-Authenticate', 'Bearer realm="patchloop"');
      refuse(response, 401, key ? 'the API key is not valid' : 'an API key is needed: Authorization: Bearer KEY');
      return;
    }
    (response.locals as { principal?: Principal }).principal = principal;
    next();
  };
}

/** Answers a `RateLimited` start as 429 with `Retry-After`, in the protocol's shape; other errors go on. */
export function refusedForRate(error: unknown, response: Response, refuse: Refuse): boolean {
  if (!(error instanceof RateLimited)) return false;
  response.set(...retryAfter(error));
  refuse(response, 429, error.message);
  return true;
}

/** patchloop's own error shape, for its own routes (and AG-UI's, which has none before its stream). */
export function ownError(response: Response, status: number, type: string, message: string): void {
  response.status(status).json({ error: { type, message } });
}

export const refuseOwn: Refuse = (response, status, message) =>
  ownError(response, status, status === 401 ? 'Unauthorized' : 'RateLimited', message);

/**
 * The gateway: one HTTP server in front of the Temporal client that keeps no state of its own (runs are
 * workflows, keys a file): restarting it loses nothing. Protocols mount their routes on `app` with the
 * context; patchloop's own routes are `GET /v1/principal` (who the key is), `GET /v1/runs` and
 * `GET /v1/runs/{id}` (the principal's runs).
 */
export function createPatchloopGateway(options: GatewayOptions): { app: Express; context: GatewayContext } {
  const context: GatewayContext = {
    agents: new Map(options.agents.map((agent) => [agent.name, agent])),
    runs: new PrincipalRuns(options.client, options.limits),
    keys: new KeyRing(options.keysFile),
    log: options.log ?? ((line) => process.stderr.write(`${line}\n`)),
  };
  const app = express();
  app.disable('x-powered-by');
  app.get('/healthz', (_request, response) => {
    response.json({ ok: true });
  });
  mountResponses(app, context);
  const own = express.Router();
  own.use(authenticate(context.keys, refuseOwn));
  own.get('/principal', (_request, response) => {
    response.json(principalOf(response));
  });
  own.get('/runs', async (request, response, next) => {
    try {
      const limit = Math.min(100, Math.max(1, Number(request.query['limit'] ?? 20) || 20));
      response.json({ runs: await context.runs.list(principalOf(response), { limit }) });
    } catch (error) {
      next(error);
    }
  });
  own.get('/runs/:id', async (request, response, next) => {
    try {
      const found = await context.runs.find(principalOf(response), request.params['id']!);
      if (!found) ownError(response, 404, 'NotFound', `no run ${request.params['id']}`);
      else response.json(found.summary);
    } catch (error) {
      next(error);
    }
  });
  app.use('/v1', own);
  mountA2a(app, context);
  mountMcp(app, context, options.allowedHosts);
  mountAgui(app, context);
  return { app, context };
}

/** Listens on host:port (0: any free port); `url` is where it answers, `close` stops it. */
export async function listen(
  app: Express,
  host: string,
  port: number,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = app.listen(port, host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
