import { isDeepStrictEqual } from 'node:util';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { repairToolArguments, toolFailureContent, toolStepErrorContent, type JsonObject } from '../context';
import { describedImages, imageUrl } from '../tools/images';
import { mcpCallLimits, type McpServerConfig, type McpToolReference } from '../runtime';
import { attemptSignal, raceAbort } from './attempt-signal';
import { McpServerError, type McpCallResult, type McpContent, type McpServers } from './mcp-connections';
import {
  callResult,
  stillRunning,
  textOutcome,
  toolOutcome,
  type CallOutcome,
  type CallScope,
  type Finished,
} from './tool-call-outcome';
import { abortedCallNote, notRepeatable, uncertainEffect } from './uncertain-effect';

/*
 * One call of an MCP server's tool in a tool batch (`runMcpTool`, from `tool-call.ts`): the server
 * started, the request under its idle and total limits and the batch's abort, and what the model
 * receives: the result read from its content parts, or an error result naming the server that says
 * when the call may still have taken effect (docs/mcp.md).
 */

/** A call on its way to a server this worker has: the call, its tool, the server and its arguments. */
interface McpCall {
  scope: CallScope;
  mcp: McpToolReference;
  server: McpServerConfig;
  connections: McpServers;
  args: { value: JsonObject; text: string };
}

/**
 * A call of an MCP server's tool, under the timeout (the server's, else the agent's) and the batch's
 * abort, which cancels the request on the server. The server is started first (within its
 * `start_timeout_seconds`), so the call's timeouts count from its request. A server that is unknown to
 * this worker, will not start, dies, times out or answers garbage gives the call an error result naming
 * the server; one that may have taken effect all the same says so, unless the tool is repeatable.
 */
export async function runMcpTool(scope: CallScope, mcp: McpToolReference): Promise<CallOutcome> {
  const { call, registry, input } = scope;
  const args = repairToolArguments(call.arguments);
  if (!args.ok)
    return callResult(scope, toolFailureContent(call.name, args.text, 'Tool arguments are not a valid JSON object'));
  const server = registry.mcpServer(input.agent, mcp.server);
  if (!server || !scope.mcp)
    return callResult(
      scope,
      toolFailureContent(call.name, args.text, `MCP server '${mcp.server}' is not configured on this worker`),
    );
  if (scope.attempt > 1 && !mcp.repeatable) return interruptedMcpCall(scope, mcp);
  const sending: McpCall = { scope, mcp, server, connections: scope.mcp, args };
  try {
    await raceAbort(scope.mcp.start(server), scope.batchSignal);
  } catch (error) {
    // Not sent yet: an abort meanwhile simply cancels it.
    return scope.batchSignal.aborted ? null : failedMcpCall(sending, error);
  }
  return sendMcpCall(sending);
}

/** The request to the started server, and its answer or why there is none. */
async function sendMcpCall(sending: McpCall): Promise<CallOutcome> {
  const { scope, mcp, server, args } = sending;
  // As recorded with the tool (the batch's own timeout was set from them); older specs: as configured here.
  const limits =
    mcp.idle_seconds !== undefined && mcp.total_seconds !== undefined
      ? { idleSeconds: mcp.idle_seconds, totalSeconds: mcp.total_seconds }
      : mcpCallLimits(server, scope.limits.timeoutSeconds);
  const under = attemptSignal(scope.batchSignal, limits.totalSeconds * 1000, limits.idleSeconds * 1000, scope.graceMs);
  let sent = false;
  try {
    // The SDK's own timeouts stay above ours, so a timeout is always reported as ours.
    const result = await raceAbort(
      sending.connections.callTool(server, mcp.tool, args.value, {
        // The server is told to stop (notifications/cancelled) when the call stops being waited for: a
        // call it finishes within the abort's grace keeps its result, as a registered tool's does.
        signal: under.waitUntil,
        timeoutMs: limits.idleSeconds * 1000 + 5000,
        maxTotalTimeoutMs: limits.totalSeconds * 1000 + 5000,
        // Reopening a session (or restarting a server that died) is not the server's silence: idle counts from here.
        onsent: () => {
          sent = true;
          under.progressed();
        },
        onprogress: ({ progress, total, message }) => {
          under.progressed();
          scope.progress({ progress, ...(total !== undefined ? { total } : {}), ...(message ? { message } : {}) });
        },
      }),
      under.waitUntil,
    );
    return await mcpResult(scope, result, args.text);
  } catch (error) {
    // Sent and unanswered (or lost with its server), a call of a tool not marked repeatable may have run.
    const uncertain = sent && !mcp.repeatable && !answeredWithError(error);
    return unansweredMcpCall(sending, { error, uncertain, timedOut: under.timedOut(), ...limits });
  } finally {
    under.release();
  }
}

/**
 * A call without its answer: stopped by the batch's abort (cancelled, or left running when it may still
 * take effect), past one of its timeouts, or failed with its server.
 */
function unansweredMcpCall(
  sending: McpCall,
  unanswered: {
    error: unknown;
    uncertain: boolean;
    timedOut: false | 'idle' | 'total';
    idleSeconds: number;
    totalSeconds: number;
  },
): CallOutcome {
  const { scope, mcp } = sending;
  const { error, uncertain, timedOut } = unanswered;
  const tool = `Tool '${scope.call.name}' (MCP server '${mcp.server}')`;
  if (scope.batchSignal.aborted)
    return uncertain ? stillRunning(scope, abortedCallNote(scope.call.name, mcp.server)) : null;
  if (timedOut) {
    const what =
      timedOut === 'idle'
        ? `${tool} timed out: no answer and no progress for ${unanswered.idleSeconds} s`
        : `${tool} timed out after ${unanswered.totalSeconds} s in all (max_call_seconds)`;
    const message = uncertain
      ? uncertainEffect(`${what}. The server was told to cancel it, but ${notRepeatable('mcp')}`)
      : what;
    return callResult(scope, toolStepErrorContent(message), false, message);
  }
  if (!uncertain) return failedMcpCall(sending, error);
  return failedMcpCall(sending, error, `. ${uncertainEffect(`The call had been sent, and ${notRepeatable('mcp')}`)}`);
}

/** The call's error result: the server's failure as the model reads it (secrets removed), and `suffix`. */
function failedMcpCall(sending: McpCall, error: unknown, suffix = ''): Finished {
  const { scope } = sending;
  const message = `${mcpErrorMessage(sending.mcp.server, error)}${suffix}`;
  return callResult(
    scope,
    toolFailureContent(scope.call.name, sending.args.text, scope.redactor?.redact(message) ?? message),
  );
}

/** An MCP call's error as the model reads it, naming the server. */
function mcpErrorMessage(server: string, error: unknown): string {
  return error instanceof McpServerError
    ? error.message
    : `MCP server '${server}' failed: ${error instanceof Error ? error.message : String(error)}`;
}

/**
 * Whether the server answered the call, with an error (a JSON-RPC error response, or an answer the SDK
 * refused): the call ended there. A closed connection or a timeout is no answer.
 */
function answeredWithError(error: unknown): boolean {
  const cause = error instanceof McpServerError && error.cause !== undefined ? error.cause : error;
  return (
    cause instanceof McpError && cause.code !== ErrorCode.ConnectionClosed && cause.code !== ErrorCode.RequestTimeout
  );
}

/** An MCP call's result as the model receives it: text, images the multimodal way, `isError` as an error. */
async function mcpResult(scope: CallScope, result: McpCallResult, argumentText: string): Promise<Finished> {
  const read = readMcpResult(result);
  if (read.isError) return callResult(scope, toolFailureContent(scope.call.name, argumentText, read.text || 'error'));
  if (read.images.length > 0) {
    const images = read.images.map((url) => imageUrl(url));
    return toolOutcome(scope, read.text ? describedImages(read.text, images) : images, argumentText);
  }
  // Text as the server wrote it (a defineTool string becomes a JSON literal; an MCP result is text already).
  return textOutcome(scope, read.text, argumentText);
}

/**
 * A call an earlier attempt of the batch started but did not finish (its worker crashed or shut down):
 * sent again only when the server marks the tool read-only or idempotent (`mcp.repeatable`). Otherwise
 * the model learns the truth, that the call may or may not have taken effect, instead of a second one.
 */
function interruptedMcpCall(scope: CallScope, mcp: McpToolReference): Finished {
  const message = interruptedMcpMessage(scope.call.name, mcp.server);
  return callResult(scope, toolStepErrorContent(message), false, message);
}

/** What the model is told about a non-repeatable MCP call a retried batch found unfinished. */
export function interruptedMcpMessage(toolName: string, serverName: string): string {
  return uncertainEffect(
    `Tool '${toolName}' (MCP server '${serverName}') was interrupted: an earlier attempt of its batch ` +
      `did not report a result for it (its worker stopped or lost contact), and ${notRepeatable('mcp')}, so it ` +
      'was not sent again',
  );
}

/**
 * What the model receives for a call's result: text parts joined, resources as readable text, and
 * structured content as JSON text after them; images (if any) separately, for the multimodal path.
 * A text part that is the structured content serialized (which the MCP spec asks servers to add for
 * clients that read only text) is that content once, not twice. `isError` marks a result the model
 * must see as the tool's error.
 */
export function readMcpResult(result: McpCallResult): { text: string; images: string[]; isError: boolean } {
  const texts: string[] = [];
  const images: string[] = [];
  const structured = result.structuredContent;
  let structuredShown = false;
  for (const item of result.content ?? []) {
    if (item.type === 'text') {
      const copy: boolean = structured !== undefined && !structuredShown && serializes(item.text, structured);
      texts.push(copy ? JSON.stringify(structured) : item.text);
      structuredShown ||= copy;
    } else if (item.type === 'image') images.push(`data:${item.mimeType};base64,${item.data}`);
    else texts.push(readableContent(item));
  }
  if (structured !== undefined && !structuredShown) texts.push(JSON.stringify(structured));
  return { text: texts.join('\n'), images, isError: result.isError === true };
}

/** A content part other than text and images, as readable text (binary left out, with its size). */
function readableContent(item: Exclude<McpContent, { type: 'text' } | { type: 'image' }>): string {
  if (item.type === 'audio')
    return `[audio (${item.mimeType}), ${Math.floor((item.data.length * 3) / 4)} bytes, not shown]`;
  if (item.type === 'resource_link')
    return `[resource link: ${item.name} <${item.uri}>${item.mimeType ? ` (${item.mimeType})` : ''}${item.description ? `: ${item.description}` : ''}]`;
  if (item.type === 'resource') {
    const { uri, mimeType, text, blob } = item.resource;
    return text !== undefined
      ? `[resource <${uri}>${mimeType ? ` (${mimeType})` : ''}]\n${text}`
      : `[resource <${uri}>${mimeType ? ` (${mimeType})` : ''}: ${Math.floor(((blob ?? '').length * 3) / 4)} bytes of binary data, not shown]`;
  }
  return `[unsupported content: ${JSON.stringify(item).slice(0, 200)}]`;
}

/** Whether a text part is the structured content serialized (any spacing, key order or number form). */
function serializes(text: string, structured: unknown): boolean {
  try {
    return isDeepStrictEqual(JSON.parse(text), structured);
  } catch {
    return false;
  }
}
