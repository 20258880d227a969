import { SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';

/** A no-op unless the worker registered a tracer provider (OTEL_EXPORTER_OTLP_ENDPOINT). */
const tracer = trace.getTracer('patchloop');

/**
 * A span around `work`, in the OpenTelemetry GenAI semantic conventions' terms (`chat <model>`,
 * `execute_tool <name>`), under the activity's span. Failures mark it with the error's type; prompt
 * and tool text are never recorded.
 */
export function inGenAiSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: Span) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  return tracer.startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      const type = (error as { type?: unknown }).type;
      span.setAttribute('error.type', typeof type === 'string' ? type : ((error as Error).name ?? 'Error'));
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}
