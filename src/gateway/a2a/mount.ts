import { AgentCard, AGENT_CARD_PATH } from '@a2a-js/sdk';
import { jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { authenticate, GATEWAY_MAX_BODY_BYTES, principalOf, type GatewayContext, type Refuse } from '../gateway';
import { agentCardOf } from './agent-card';
import { Caller, type Binding } from './caller';
import { RunTasks } from './run-tasks';

/** JSON-RPC's error codes the gateway answers itself (before the SDK reads the request). */
const JSON_RPC = { parseError: -32700, invalidRequest: -32600, methodNotFound: -32601 };

/** An error before the SDK, in the binding's shape: a JSON-RPC error object, or the REST binding's `error`. */
function refuseIn(binding: Binding, response: Response, status: number, code: number, message: string): void {
  if (binding === 'JSONRPC') response.status(status).json({ jsonrpc: '2.0', id: null, error: { code, message } });
  else {
    const names: Record<number, string> = {
      400: 'INVALID_ARGUMENT',
      401: 'UNAUTHENTICATED',
      404: 'NOT_FOUND',
      413: 'INVALID_ARGUMENT',
      429: 'RESOURCE_EXHAUSTED',
    };
    response.status(status).json({ error: { code: status, status: names[status] ?? 'UNKNOWN', message, details: [] } });
  }
}

/** The binding a request to `/a2a/AGENT...` speaks: JSON-RPC at the agent's URL itself, HTTP+JSON below it. */
function bindingOf(request: Request): Binding {
  return request.path === '/' ? 'JSONRPC' : 'HTTP+JSON';
}

const refuseA2a: Refuse = (response, status, message) =>
  refuseIn(bindingOf(response.req), response, status, JSON_RPC.invalidRequest, message);

/** Reads a JSON body up to the limit; a larger or broken one gets the binding's error and reaches nothing. */
function boundedJson(): RequestHandler[] {
  const parse = express.json({
    limit: GATEWAY_MAX_BODY_BYTES,
    type: ['application/json', 'application/a2a+json'],
    strict: false,
  });
  const refused = (error: unknown, request: Request, response: Response, next: NextFunction) => {
    const type = (error as { type?: string }).type;
    if (type === 'entity.too.large')
      refuseIn(
        bindingOf(request),
        response,
        413,
        JSON_RPC.invalidRequest,
        `the request is larger than ${GATEWAY_MAX_BODY_BYTES} bytes`,
      );
    else if (type === 'entity.parse.failed')
      refuseIn(
        bindingOf(request),
        response,
        bindingOf(request) === 'JSONRPC' ? 200 : 400,
        JSON_RPC.parseError,
        'Invalid JSON payload.',
      );
    else next(error);
  };
  return [parse, refused as unknown as RequestHandler];
}

/**
 * A2A on the gateway (docs/gateway.md, "A2A"): one A2A agent per patchloop agent at `/a2a/AGENT`, its
 * card (public) at `/a2a/AGENT/.well-known/agent-card.json`, JSON-RPC at `/a2a/AGENT` and HTTP+JSON
 * below it (`/a2a/AGENT/message:send`, `/a2a/AGENT/tasks/{id}`, ...), each through the SDK's transport
 * over `RunTasks`. Every route but the card needs a key; the caller's principal reaches the handler as
 * the SDK's user.
 */
export function mountA2a(app: Express, context: GatewayContext): void {
  const userBuilder = (request: Request) =>
    Promise.resolve(new Caller(principalOf(request.res!), bindingOf(request), request.res!));
  const served = new Map(
    [...context.agents.values()].map((agent) => {
      // The card's URL is the request's; the handler's card (the SDK checks versions against it) any.
      const handler = new RunTasks(agent, context.runs, agentCardOf(agent, `/a2a/${agent.name}`));
      return [
        agent.name,
        {
          agent,
          jsonRpc: jsonRpcHandler({ requestHandler: handler, userBuilder }),
          rest: restHandler({ requestHandler: handler, userBuilder }),
        },
      ];
    }),
  );
  const router = express.Router({ mergeParams: true });
  router.use((request, response, next) => {
    const name = (request.params as { agent?: string }).agent ?? '';
    if (served.has(name)) return next();
    const names = [...served.keys()].join(', ');
    refuseIn(
      bindingOf(request),
      response,
      404,
      JSON_RPC.methodNotFound,
      `no agent named ${JSON.stringify(name)} here (agents: ${names})`,
    );
  });
  router.get(`/${AGENT_CARD_PATH}`, (request, response) => {
    const { agent } = served.get((request.params as { agent: string }).agent)!;
    const url = `${request.protocol}://${request.get('host')}/a2a/${agent.name}`;
    response.json(AgentCard.toJSON(agentCardOf(agent, url)));
  });
  router.use(authenticate(context.keys, refuseA2a));
  router.use(...boundedJson());
  router.use((request, response, next) => {
    const { jsonRpc, rest } = served.get((request.params as { agent: string }).agent)!;
    if (bindingOf(request) === 'JSONRPC') {
      if (request.method !== 'POST')
        return refuseIn('JSONRPC', response, 405, JSON_RPC.invalidRequest, 'JSON-RPC requests are POSTs');
      return jsonRpc(request, response, next);
    }
    rest(request, response, next);
  });
  app.use('/a2a/:agent', router);
}
