import { randomUUID } from 'node:crypto';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { isLoopbackAddress, isLoopbackHost } from '../../config/loopback';
import { authenticate, GATEWAY_MAX_BODY_BYTES, principalOf, type GatewayContext, type Refuse } from '../gateway';
import type { Principal } from '../principal';
import { agentsMcpServer } from './agents-server';

/** JSON-RPC error codes the route answers itself (before the SDK reads the request). */
const JSON_RPC = { parseError: -32700, invalidRequest: -32600, sessionNotFound: -32001 };
/** The most sessions one gateway process keeps; past it the longest idle one is closed. */
const MAX_SESSIONS = 1000;
/** A session nobody used for this long is closed (its tasks are runs: a new session finds them). */
const SESSION_IDLE_MS = 30 * 60 * 1000;
/** The most sessions one principal keeps in one process; past it its own longest idle one is closed. */
const MAX_SESSIONS_PER_PRINCIPAL = 100;

interface Session {
  transport: StreamableHTTPServerTransport;
  server: Server;
  principal: Principal;
  used: number;
  /** Requests of the session being answered now (a call that waits for its run): it is not idle. */
  open: number;
}

/** An error in JSON-RPC's shape, with an HTTP status. */
function refuseRpc(response: Response, status: number, code: number, message: string): void {
  response.status(status).json({ jsonrpc: '2.0', id: null, error: { code, message } });
}

const refuseMcp: Refuse = (response, status, message) => refuseRpc(response, status, JSON_RPC.invalidRequest, message);

/** The host of an Origin URL with its port, as a Host header names it ('' when it is broken). */
function originHost(origin: string): string {
  try {
    return new URL(origin).host.toLowerCase();
  } catch {
    return '';
  }
}

/**
 * DNS-rebinding protection: a gateway listening on a loopback address answers only requests whose Host
 * (and Origin, when a browser sent one) is a loopback name or one of `allowedHosts` (a reverse proxy's
 * public name); any gateway refuses an Origin that is not its Host (a web page of another site).
 */
function fromAllowedHost(request: Request, allowedHosts: ReadonlySet<string>): boolean {
  const host = (request.get('host') ?? '').toLowerCase();
  const origin = request.get('origin');
  const allowed = (name: string) => isLoopbackHost(name) || allowedHosts.has(name.replace(/:\d+$/, ''));
  if (isLoopbackAddress(request.socket.localAddress) && !allowed(host)) return false;
  return origin === undefined || originHost(origin) === host;
}

/**
 * MCP on the gateway (docs/mcp-server.md): Streamable HTTP at `/mcp`, the key as `Authorization: Bearer
 * KEY`. A session (`Mcp-Session-Id`) is this process's, bound to the key's principal, and closed after an
 * idle half hour or when too many are open; what it started is not: tasks are runs, and any later session
 * of the principal reads them (`RunTaskStore`). A request for a session this process does not have (it
 * restarted) gets 404, the protocol's sign to initialize again.
 */
export function mountMcp(app: Express, context: GatewayContext, allowedHosts: readonly string[] = []): void {
  const hosts = new Set(allowedHosts.map((host) => host.toLowerCase()));
  const sessions = new Map<string, Session>();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [id, session] of sessions)
      if (session.open === 0 && now - session.used > SESSION_IDLE_MS) void close(id);
  }, 60_000);
  sweep.unref();

  async function close(id: string): Promise<void> {
    const session = sessions.get(id);
    sessions.delete(id);
    await session?.transport.close().catch(() => undefined);
  }

  /** Closes the longest idle session among these (one answering a request last), if any. */
  async function closeIdlest(among: Array<[string, Session]>): Promise<void> {
    const [idlest] = among.sort(([, a], [, b]) => Number(a.open > 0) - Number(b.open > 0) || a.used - b.used)[0] ?? [];
    if (idlest) await close(idlest);
  }

  async function opened(request: Request, response: Response, principal: Principal): Promise<void> {
    const own = [...sessions].filter(([, session]) => session.principal.name === principal.name);
    if (own.length >= MAX_SESSIONS_PER_PRINCIPAL) await closeIdlest(own);
    else if (sessions.size >= MAX_SESSIONS) await closeIdlest([...sessions]);
    const server = agentsMcpServer({ principal, runs: context.runs, agents: context.agents });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server, principal, used: Date.now(), open: 0 });
      },
      onsessionclosed: (id) => {
        sessions.delete(id);
      },
    });
    await server.connect(transport);
    await transport.handleRequest(request, response, request.body);
  }

  const router = express.Router();
  router.use((request, response, next) => {
    if (fromAllowedHost(request, hosts)) return next();
    refuseRpc(
      response,
      403,
      JSON_RPC.invalidRequest,
      'the Host or Origin header names a host this server does not serve',
    );
  });
  router.use(authenticate(context.keys, refuseMcp));
  router.use(
    express.json({ limit: GATEWAY_MAX_BODY_BYTES }),
    (error: unknown, _request: Request, response: Response, next: NextFunction) => {
      const type = (error as { type?: string }).type;
      if (type === 'entity.too.large')
        refuseRpc(response, 413, JSON_RPC.invalidRequest, `the request is larger than ${GATEWAY_MAX_BODY_BYTES} bytes`);
      else if (type === 'entity.parse.failed') refuseRpc(response, 400, JSON_RPC.parseError, 'Parse error');
      else next(error);
    },
  );
  router.all('/', async (request, response, next) => {
    try {
      const principal = principalOf(response);
      const id = request.get('mcp-session-id');
      if (id === undefined) {
        if (request.method === 'POST' && isInitializeRequest(request.body))
          return await opened(request, response, principal);
        return refuseRpc(response, 400, JSON_RPC.invalidRequest, 'no Mcp-Session-Id: send initialize first');
      }
      const session = sessions.get(id);
      // Another principal's session (or the same name's with another scope) is not found, as an unknown
      // one: a caller learns nothing of it.
      if (!session || session.principal.name !== principal.name || session.principal.admin !== principal.admin)
        return refuseRpc(response, 404, JSON_RPC.sessionNotFound, 'Session not found: initialize a new session');
      session.used = Date.now();
      // Open until its response ends (a call's stream lasts as long as its run).
      session.open += 1;
      response.once('close', () => {
        session.open -= 1;
        session.used = Date.now();
      });
      await session.transport.handleRequest(request, response, request.body);
    } catch (error) {
      next(error);
    }
  });
  app.use('/mcp', router);
}
