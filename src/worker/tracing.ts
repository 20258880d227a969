import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

/** Tracing for a worker: Temporal's plugin (workflow and activity spans) plus the GenAI spans of activities. */
export interface Tracing {
  plugin: OpenTelemetryPlugin;
  /** Flushes what is buffered: call it when the worker stops. */
  shutdown(): Promise<void>;
}

/**
 * OpenTelemetry over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is set:
 * Temporal's interceptors make workflow, activity and client spans (workflow spans leave through a
 * sink, which replays do not call, so none is duplicated), and a registered provider carries the
 * `chat <model>` and `execute_tool <name>` spans the activities start (GenAI semantic conventions,
 * no prompt text). Undefined when no endpoint is set: nothing is traced.
 */
/** Whether the OTEL_* variables ask for tracing (an OTLP endpoint is set). */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env['OTEL_EXPORTER_OTLP_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
}

export function tracingFromEnvironment(env: NodeJS.ProcessEnv = process.env): Tracing | undefined {
  if (!tracingConfigured(env)) return undefined;
  const resource = new Resource({ 'service.name': env['OTEL_SERVICE_NAME'] || 'patchloop-worker' });
  // The exporter reads the endpoint, headers and timeouts from the standard OTEL_* variables.
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter());
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  return {
    plugin: new OpenTelemetryPlugin({ resource, spanProcessor }),
    shutdown: () => provider.shutdown(),
  };
}
