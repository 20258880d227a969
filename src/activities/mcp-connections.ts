import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { JsonObject } from '../context';
import { MCP_LISTING_SECONDS, type McpServerConfig } from '../runtime';

/*
 * The worker's connections to MCP servers (`McpServers`): stdio processes and HTTP sessions, started
 * within their `start_timeout_seconds`, listed page by page, called, reopened when lost, closed with
 * the worker; `${VAR}` values resolved from the worker's environment, here only. What a run lists is
 * in `mcp-tool-listing.ts`, what a call gives the model in `mcp-tool-call.ts` (docs/mcp.md).
 */

/** What an MCP server says about one of its tools (the fields patchloop uses). */
export interface McpToolListing {
  name: string;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
  /** Hints about the tool's behaviour; patchloop reads the two that make a repeated call harmless. */
  annotations?: { readOnlyHint?: boolean | undefined; idempotentHint?: boolean | undefined } | undefined;
}

/** An MCP server the worker could not reach, start or understand; the message names the server. */
export class McpServerError extends Error {
  override readonly name: string = 'McpServerError';
}

/**
 * A server that did not start within its `start_timeout_seconds`: trying again at once would wait as
 * long again, so the run's start fails without more attempts.
 */
export class McpStartTimeout extends McpServerError {
  override readonly name = 'McpStartTimeout';
}

interface Connection {
  client: Client;
  transport: Transport;
  closed: boolean;
  /** The last lines a stdio server wrote to stderr (why it would not start, or died). */
  stderr: string[];
}

const STDERR_LINES = 20;
/** How many of them an error message quotes. */
const STDERR_SHOWN = 3;
/** `${VAR}`: a worker environment variable named in a server's `env` or `headers` value. */
const VARIABLE_REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * The environment variables a server's `env` and `headers` values name (`${VAR}`): their values are
 * secrets the worker's redactor removes from everything that leaves it.
 */
export function mcpSecretVariables(server: McpServerConfig): string[] {
  const values = Object.values('command' in server ? server.env : server.headers);
  return [...new Set(values.flatMap((value) => [...value.matchAll(VARIABLE_REFERENCE)].map((match) => match[1]!)))];
}

/** A listing is bounded: a server that pages on and on is refused, not followed (a run records its tools). */
const MAX_LIST_PAGES = 50;
const MAX_LISTED_TOOLS = 1000;

/**
 * The worker's connections to MCP servers, one per server configuration (a stdio process is started
 * once and again when it died; an HTTP session is opened again when the server forgot it). `${VAR}`
 * values of `env` and `headers` are resolved here, from the worker's environment, and go nowhere else.
 */
export class McpServers {
  private readonly connections = new Map<string, Promise<Connection>>();

  constructor(private readonly environment: NodeJS.ProcessEnv = process.env) {}

  /**
   * The server started (once per configuration; again after it died), within its
   * `start_timeout_seconds`. A call starts it first, so the call's own timeouts count from its request.
   */
  async start(server: McpServerConfig): Promise<void> {
    await this.connection(server);
  }

  /** The server's tools, every page, in the server's order, within MCP_LISTING_SECONDS once it started. */
  async listTools(server: McpServerConfig): Promise<McpToolListing[]> {
    const connection = await this.connection(server);
    const tools: McpToolListing[] = [];
    const deadline = Date.now() + MCP_LISTING_SECONDS * 1000;
    let cursor: string | undefined;
    try {
      for (let pages = 1; ; pages += 1) {
        const page = await connection.client.listTools(cursor === undefined ? {} : { cursor }, {
          timeout: Math.max(1, deadline - Date.now()),
        });
        tools.push(...page.tools);
        cursor = page.nextCursor;
        if (cursor === undefined) break;
        if (pages >= MAX_LIST_PAGES || tools.length >= MAX_LISTED_TOOLS)
          throw new Error(`it lists more than ${MAX_LIST_PAGES} pages or ${MAX_LISTED_TOOLS} tools; not taken`);
      }
    } catch (error) {
      // A server that answered with an error (or slowly) stays: other runs' calls may be using it.
      if (connection.closed) this.forget(server, connection);
      throw new McpServerError(`MCP server '${server.name}' could not list its tools: ${reason(error, connection)}`);
    }
    return tools;
  }

  /**
   * Calls a tool. Aborting `signal` cancels the request (the SDK sends `notifications/cancelled`). A
   * session the HTTP server no longer knows is opened again and the call sent once more (the server
   * never saw it); any other failure is the call's, never retried here.
   */
  async callTool(
    server: McpServerConfig,
    tool: string,
    args: JsonObject,
    options: {
      signal: AbortSignal;
      /** Without an answer or progress (each progress notification starts it anew). */
      timeoutMs: number;
      maxTotalTimeoutMs: number;
      onprogress?: (progress: McpProgress) => void;
      /** The request goes out now (a server that had to be started or reconnected is ready). */
      onsent?: () => void;
    },
  ): Promise<McpCallResult> {
    for (let attempt = 1; ; attempt += 1) {
      const connection = await this.connection(server);
      options.onsent?.();
      try {
        const result = await connection.client.callTool({ name: tool, arguments: args }, undefined, {
          signal: options.signal,
          timeout: options.timeoutMs,
          maxTotalTimeout: options.maxTotalTimeoutMs,
          ...(options.onprogress ? { onprogress: options.onprogress, resetTimeoutOnProgress: true } : {}),
        });
        return result as McpCallResult;
      } catch (error) {
        if (options.signal.aborted) throw error;
        if (attempt === 1 && sessionGone(error)) {
          this.forget(server, connection);
          continue;
        }
        if (connection.closed) this.forget(server, connection);
        throw new McpServerError(`MCP server '${server.name}' failed: ${reason(error, connection)}`, { cause: error });
      }
    }
  }

  /** Closes every connection (stdio servers exit). */
  async close(): Promise<void> {
    const open = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(open.map(async (pending) => (await pending.catch(() => undefined))?.client.close()));
  }

  private connection(server: McpServerConfig): Promise<Connection> {
    const key = JSON.stringify(server);
    const existing = this.connections.get(key);
    if (existing) {
      return existing.then(
        (connection) => (connection.closed ? this.reconnect(key, server) : connection),
        () => this.reconnect(key, server),
      );
    }
    return this.reconnect(key, server);
  }

  private reconnect(key: string, server: McpServerConfig): Promise<Connection> {
    const pending = this.connect(server);
    this.connections.set(key, pending);
    pending.catch(() => {
      if (this.connections.get(key) === pending) this.connections.delete(key);
    });
    return pending;
  }

  private forget(server: McpServerConfig, connection: Connection): void {
    connection.closed = true;
    void connection.client.close().catch(() => undefined);
    const key = JSON.stringify(server);
    void this.connections
      .get(key)
      ?.then((current) => {
        if (current === connection) this.connections.delete(key);
      })
      .catch(() => undefined);
  }

  private async connect(server: McpServerConfig): Promise<Connection> {
    const transport = this.transport(server);
    const client = new Client({ name: 'patchloop', version: '1' }, { capabilities: {} });
    const connection: Connection = { client, transport, closed: false, stderr: [] };
    if (transport instanceof StdioClientTransport) {
      transport.stderr?.on('data', (chunk: Buffer) => {
        connection.stderr.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        connection.stderr.splice(0, Math.max(0, connection.stderr.length - STDERR_LINES));
      });
    }
    client.onclose = () => {
      connection.closed = true;
    };
    // Spawning the process (or opening the session) and `initialize` answered, within the server's limit.
    const limitMs = server.start_timeout_seconds * 1000;
    try {
      await client.connect(transport, { timeout: limitMs, maxTotalTimeout: limitMs });
    } catch (error) {
      connection.closed = true;
      // A stdio process is stopped (its stdin closed, then SIGTERM, then SIGKILL).
      await client.close().catch(() => undefined);
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout)
        throw new McpStartTimeout(
          `MCP server '${server.name}' did not start within its start_timeout_seconds, ${server.start_timeout_seconds} s${stderrTail(connection)}`,
        );
      throw new McpServerError(`MCP server '${server.name}' did not start: ${reason(error, connection)}`);
    }
    return connection;
  }

  private transport(server: McpServerConfig): Transport {
    if ('command' in server) {
      return new StdioClientTransport({
        command: server.command,
        args: server.args,
        env: { ...getDefaultEnvironment(), ...this.resolved(server, server.env) },
        ...(server.cwd !== undefined ? { cwd: server.cwd } : {}),
        stderr: 'pipe',
      });
    }
    return new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: this.resolved(server, server.headers) },
    });
  }

  /** `${VAR}` in values replaced by the worker's environment; a variable it lacks is an error (named, not shown). */
  private resolved(server: McpServerConfig, values: Record<string, string>): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(values)) {
      out[name] = value.replace(VARIABLE_REFERENCE, (_, variable: string) => {
        const found = this.environment[variable];
        if (found === undefined)
          throw new McpServerError(
            `MCP server '${server.name}': environment variable ${variable} (for ${name}) is not set on this worker`,
          );
        return found;
      });
    }
    return out;
  }
}

/** A progress notification of a running call (MCP `notifications/progress`). */
export interface McpProgress {
  progress: number;
  total?: number;
  message?: string;
}

/** A `tools/call` result, as the SDK has checked it. */
export interface McpCallResult {
  content?: McpContent[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

export type McpContent =
  | { type: 'text'; text: string }
  | { type: 'image'; data: string; mimeType: string }
  | { type: 'audio'; data: string; mimeType: string }
  | { type: 'resource_link'; uri: string; name: string; description?: string; mimeType?: string }
  | { type: 'resource'; resource: { uri: string; mimeType?: string; text?: string; blob?: string } };

/** Whether an HTTP server answered that it no longer knows the session (it restarted): safe to send again. */
function sessionGone(error: unknown): boolean {
  return (
    error instanceof StreamableHTTPError && (error.code === 404 || error.code === 400) && /session/i.test(error.message)
  );
}

function reason(error: unknown, connection: Connection): string {
  const message = error instanceof Error ? error.message : String(error);
  return `${message}${stderrTail(connection)}`;
}

/** A stdio server's last lines on stderr (why it would not start, or died), for an error message. */
function stderrTail(connection: Connection): string {
  return connection.stderr.length > 0 ? ` (stderr: ${connection.stderr.slice(-STDERR_SHOWN).join(' | ')})` : '';
}
