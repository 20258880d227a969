import { randomUUID } from 'node:crypto';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { authenticate, GATEWAY_MAX_BODY_BYTES, principalOf, type GatewayContext, type Refuse } from '../gateway';
import type { Principal } from '../principal';
import { agentsMcpServer } from './agents-server';

/** JSON-RPC error codes the route answers itself (before the SDK reads the request). */
const JSON_RPC = { parseError: -32700, invalidRequest: -32600, sessionNotFound: -32001 };
/** The most sessions one gateway process keeps; past it the longest idle one is closed. */
const MAX_SESSIONS = 1000;
/** A session nobody used for this long is closed (its tasks are runs: a new session finds them). */
const SESSION_IDLE_MS = 30 * 60 * 1000;
/** Host names a gateway listening on a loopback address answers to (DNS-rebinding protection). */
const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

interface Session {
  transport: StreamableHTTPServerTransport;
  server: Server;
  principal: Principal;
  used: number;
}

/** An error in JSON-RPC's shape, with an HTTP status. */
function refuseRpc(response: Response, status: number, code: number, message: string): void {
  response.status(status).json({ jsonrpc: '2.0', id: null, error: { code, message } });
}

const refuseMcp: Refuse = (response, status, message) => refuseRpc(response, status, JSON_RPC.invalidRequest, message);

/** The host name of a Host header or an Origin URL, lower case ('' when there is none or it is broken). */
function hostNameOf(value: string | undefined, isOrigin: boolean): string {
  if (!value) return '';
  try {
    return new URL(isOrigin ? value : `http://${value}`).hostname.toLowerCase();
  } catch {
    return '';
  }
}

/**
 * DNS-rebinding protection: a gateway listening on a loopback address answers only requests whose Host
 * (and Origin, when a browser sent one) name a loopback host; any gateway refuses an Origin that is not
 * its Host (a web page of another site).
 */
function fromAllowedHost(request: Request): boolean {
  const host = hostNameOf(request.get('host'), false);
  const origin = request.get('origin');
  const local = request.socket.localAddress ?? '';
  if (local === '::1' || local.startsWith('127.') || local === '::ffff:127.0.0.1') {
    if (!LOOPBACK_NAMES.has(host)) return false;
    return origin === undefined || LOOPBACK_NAMES.has(hostNameOf(origin, true));
  }
  return origin === undefined || hostNameOf(origin, true) === host;
}

/**
 * MCP on the gateway (docs/mcp-server.md): Streamable HTTP at `/mcp`, the key as `Authorization: Bearer
 * KEY`. A session (`Mcp-Session-Id`) is this process's, bound to the key's principal, and closed after an
 * idle half hour or when too many are open; what it started is not: tasks are runs, and any later session
 * of the principal reads them (`RunTaskStore`). A request for a session this process does not have (it
 * restarted) gets 404, the protocol's sign to initialize again.
 */
export function mountMcp(app: Express, context: GatewayContext): void {
  const sessions = new Map<string, Session>();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [id, session] of sessions) if (now - session.used > SESSION_IDLE_MS) void close(id);
  }, 60_000);
  sweep.unref();

  async function close(id: string): Promise<void> {
    const session = sessions.get(id);
    sessions.delete(id);
    await session?.transport.close().catch(() => undefined);
  }

  async function opened(request: Request, response: Response, principal: Principal): Promise<void> {
    if (sessions.size >= MAX_SESSIONS) {
      const [idlest] = [...sessions].sort(([, a], [, b]) => a.used - b.used)[0] ?? [];
      if (idlest) await close(idlest);
    }
    const server = agentsMcpServer({ principal, runs: context.runs, agents: context.agents });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server, principal, used: Date.now() });
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
    if (fromAllowedHost(request)) return next();
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
      // Another principal's session is not found, as an unknown one: a caller learns nothing of it.
      if (!session || session.principal.name !== principal.name)
        return refuseRpc(response, 404, JSON_RPC.sessionNotFound, 'Session not found: initialize a new session');
      session.used = Date.now();
      await session.transport.handleRequest(request, response, request.body);
    } catch (error) {
      next(error);
    }
  });
  app.use('/mcp', router);
}
