import {
  makeTelemetryFilterString,
  type Logger,
  type LogLevel,
  type LogMetadata,
  type NativeConnection,
  type TelemetryOptions,
} from '@temporalio/worker';

/**
 * Core's own log lines (warnings and errors), forwarded to the worker's logger instead of printed
 * beside it: a `WorkerLog` can then say each problem once.
 */
export const FORWARDED_CORE_LOGS: TelemetryOptions['logging'] = {
  filter: makeTelemetryFilterString({ core: 'WARN' }),
  forward: {},
};

/** How often the worker asks whether an unreachable server is back. */
const PROBE_INTERVAL_MS = 1000;
/** Failure messages kept per run, to say each problem once (an activity's failure that fails its run). */
const REMEMBERED_RUNS = 1000;

/** What Core's client logs while the server cannot be reached: every call retried, each its own line. */
const CONNECTION_TROUBLE =
  /\bUnavailable\b|tcp connect error|transport error|connection refused|connection reset|broken pipe|error trying to connect|dns error/i;

/**
 * The worker's terminal, one line per problem. Without `verbose`:
 * - a failed activity or run is one line: its run, the failure's type and message, no stack and no
 *   task token (an unknown agent: the agent and the agents served); a run that fails of its
 *   activity's failure adds no line of its own;
 * - while the Temporal server cannot be reached, one line says so instead of Core's retry of every
 *   poll (about 70 lines in 30 s), and one line says when it is back (the worker asks every second).
 * Everything else passes on as it came. With `verbose`, everything passes on as it came.
 */
export class WorkerLog implements Logger {
  /** `checking`: a sign of trouble came, the server is being asked; `unreachable`: it did not answer. */
  private connection: 'fine' | 'checking' | 'unreachable' = 'fine';
  private server: NativeConnection | undefined;
  private readonly said = new Map<string, string>();

  constructor(
    private readonly inner: Logger,
    private readonly options: { address: string; verbose: boolean },
  ) {}

  /** The worker's connection, once made: it is asked whether the server answers. */
  watchConnection(connection: NativeConnection): void {
    this.server = connection;
  }

  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    if (this.options.verbose) return this.inner.log(level, message, meta);
    if (meta?.['sdkComponent'] === 'core' && CONNECTION_TROUBLE.test(`${message} ${String(meta['error'] ?? '')}`))
      return this.serverUnreachable(String(meta['error'] ?? message));
    const error = meta?.['error'];
    if (error instanceof Error && (message === 'Activity failed' || message === 'Workflow failed'))
      return this.failure(level, message, meta!, error);
    this.inner.log(level, message, meta);
  }
  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }
  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }
  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }
  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }
  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }

  /** One line per failure: `run <id> (<workflow type>): <what failed>: <Type>: <message>`. */
  private failure(level: LogLevel, message: string, meta: LogMetadata, error: Error): void {
    const runId = String(meta['workflowId'] ?? '?');
    const type = (error as { type?: unknown }).type;
    const reason = `${typeof type === 'string' && type !== 'Error' ? `${type}: ` : ''}${error.message}`;
    if (message === 'Workflow failed') {
      // The run failed of the activity failure already said: no second line for one problem.
      const earlier = this.said.get(runId);
      this.said.delete(runId);
      if (earlier !== undefined && error.message.endsWith(earlier)) return;
      return this.inner.log(level, `run ${runId} (${String(meta['workflowType'] ?? 'workflow')}) failed: ${reason}`);
    }
    const retrying = (error as { nonRetryable?: unknown }).nonRetryable !== true;
    const attempt = Number(meta['attempt'] ?? 1);
    this.remember(runId, error.message);
    this.inner.log(
      level,
      `run ${runId} (${String(meta['workflowType'] ?? 'workflow')}): activity ${String(meta['activityType'] ?? '?')} ` +
        `failed${retrying ? ` (attempt ${attempt}; Temporal retries it within its policy)` : ''}: ${reason}`,
    );
  }

  private remember(runId: string, message: string): void {
    this.said.delete(runId);
    this.said.set(runId, message);
    if (this.said.size > REMEMBERED_RUNS) this.said.delete(this.said.keys().next().value!);
  }

  /**
   * A sign of trouble: the server is asked at once (Core's retries that end just after the server came
   * back are no news). If it does not answer, one line says so, and another once it answers again.
   */
  private serverUnreachable(cause: string): void {
    if (this.connection !== 'fine') return;
    this.connection = 'checking';
    void this.answers().then(async (answered) => {
      if (answered) {
        this.connection = 'fine';
        return;
      }
      this.connection = 'unreachable';
      const why = /message: "([^"]+)"/.exec(cause)?.[1] ?? cause.split('\n')[0]!.slice(0, 120);
      this.inner.warn(
        `cannot reach Temporal at ${this.options.address} (${why}): the worker keeps trying; runs wait meanwhile`,
      );
      while (!(await this.answers())) await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS).unref());
      this.connection = 'fine';
      this.inner.warn(`reconnected to ${this.options.address}`);
    });
  }

  /** Whether the server answers a cheap call within two seconds. */
  private async answers(): Promise<boolean> {
    const server = this.server;
    if (!server) return false;
    return server
      .withDeadline(Date.now() + 2000, () => server.workflowService.getSystemInfo({}))
      .then(
        () => true,
        () => false,
      );
  }
}
