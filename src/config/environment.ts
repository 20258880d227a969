/** Settings a worker and the CLI read from the environment, with their defaults. */
export interface PatchloopConfig {
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  openaiBaseUrl: string | undefined;
  openaiApiKey: string | undefined;
  model: string;
  /**
   * How long the server waits for a worker's sticky queue before handing a workflow task to any worker.
   * Lower it where workers die often (tests); Temporal's default is 10 s.
   */
  stickyQueueTimeout: string | undefined;
  /** The worker's token-stream endpoint (SSE): port (0 picks a free one), bind host, and the URL to announce. */
  streamPort: number;
  streamHost: string;
  streamUrl: string | undefined;
  /**
   * Secret the per-run stream tokens derive from. Random per process when unset; set the same value on
   * every worker behind one stream URL.
   */
  streamSecret: string | undefined;
}

export function configFromEnvironment(env: NodeJS.ProcessEnv = process.env): PatchloopConfig {
  return {
    temporalAddress: env['TEMPORAL_ADDRESS'] || 'localhost:7233',
    namespace: env['TEMPORAL_NAMESPACE'] || 'default',
    taskQueue: env['PATCHLOOP_TASK_QUEUE'] || 'patchloop',
    openaiBaseUrl: env['OPENAI_BASE_URL'] || undefined,
    openaiApiKey: env['OPENAI_API_KEY'] || undefined,
    model: env['PATCHLOOP_MODEL'] || 'gpt-4o-mini',
    stickyQueueTimeout: env['PATCHLOOP_STICKY_QUEUE_TIMEOUT'] || undefined,
    streamPort: Number(env['PATCHLOOP_STREAM_PORT'] || 0),
    streamHost: env['PATCHLOOP_STREAM_HOST'] || '127.0.0.1',
    streamUrl: env['PATCHLOOP_STREAM_URL'] || undefined,
    streamSecret: env['PATCHLOOP_STREAM_SECRET'] || undefined,
  };
}
