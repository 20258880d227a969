import { LevelLogger } from './level-logger';
import type { LogLevel, LogMetadata, Logger } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { mcpSecretVariables } from '../activities/mcp-connections';
import { SecretRedactor } from '../activities/redact';
import type { PatchloopConfig } from '../config/environment';
import type { AgentDefinition } from '../runtime';

/**
 * What must never leave the worker: the configured provider key, the keys agents' providers read from
 * the environment, the values of the variables agents' MCP servers name (`${VAR}`), and anything
 * shaped like a key.
 */
export function workerRedactor(
  config: Pick<PatchloopConfig, 'openaiApiKey'>,
  agents: readonly AgentDefinition[] = [],
  environment: NodeJS.ProcessEnv = process.env,
): SecretRedactor {
  const agentKeys = agents.flatMap((agent) => {
    const name = agent.provider?.api_key_env;
    return name ? [environment[name]] : [];
  });
  const mcpSecrets = agents.flatMap((agent) =>
    agent.mcp_servers.flatMap((server) => mcpSecretVariables(server).map((name) => environment[name])),
  );
  return new SecretRedactor([config.openaiApiKey, ...agentKeys, ...mcpSecrets]);
}

/**
 * Secrets never leave an activity: every failure it throws (message, stack, details, causes) is
 * redacted before the worker logs it or reports it to the server (and so into history), and the
 * configured keys are removed from whatever it returns.
 */
export function redactionInterceptor(redactor: SecretRedactor): ActivityInterceptorsFactory {
  return () => ({
    inbound: {
      async execute(input, next) {
        try {
          const result = await next(input);
          return redactor.containsSecret(result) ? redactor.redactValue(result) : result;
        } catch (error) {
          throw redactor.redactError(error);
        }
      },
    },
  });
}

/** A logger that redacts messages and metadata before the wrapped logger writes them. */
export class RedactingLogger extends LevelLogger {
  constructor(
    private readonly inner: Logger,
    private readonly redactor: SecretRedactor,
  ) {
    super();
  }

  override log(level: LogLevel, message: string, meta?: LogMetadata): void {
    this.inner.log(level, this.redactor.redact(message), meta ? this.redactMeta(meta) : meta);
  }

  private redactMeta(meta: LogMetadata): LogMetadata {
    return Object.fromEntries(
      Object.entries(meta).map(([key, value]) => [
        key,
        value instanceof Error
          ? this.redactor.redactError(value)
          : this.redactor.redactValue(value, (text) => this.redactor.redact(text)),
      ]),
    );
  }
}
