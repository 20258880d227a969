import { getHeapStatistics } from 'node:v8';
import type { MetricMeter } from '@temporalio/common';
import type { TelemetryOptions } from '@temporalio/worker';

/**
 * Prometheus metrics on `host:port` (`/metrics`): the SDK's own worker metrics (workflow cache size,
 * hits and misses, task latencies, slots) plus the worker's heap, which the cache bound is about.
 */
export function prometheusTelemetry(bindAddress: string): TelemetryOptions {
  if (!/^[^\s:]+:\d{1,5}$/.test(bindAddress))
    throw new Error(`metrics address '${bindAddress}' is not HOST:PORT (for example 0.0.0.0:9464)`);
  return { metrics: { prometheus: { bindAddress } } };
}

/** Keeps `patchloop_worker_heap_used_bytes` and `patchloop_worker_heap_limit_bytes` current; returns the stop. */
export function startHeapGauges(meter: MetricMeter, intervalMs = 1000): () => void {
  const used = meter.createGauge('patchloop_worker_heap_used_bytes', 'int', 'bytes', 'V8 heap in use');
  const limit = meter.createGauge('patchloop_worker_heap_limit_bytes', 'int', 'bytes', 'V8 heap size limit');
  const sample = () => {
    const heap = getHeapStatistics();
    used.set(heap.used_heap_size);
    limit.set(heap.heap_size_limit);
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
