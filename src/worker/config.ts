/** Settings a worker and the CLI read from the environment, with their defaults. */
export interface PatchloopConfig {
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  openaiBaseUrl: string | undefined;
  openaiApiKey: string | undefined;
  model: string;
}

export function configFromEnvironment(env: NodeJS.ProcessEnv = process.env): PatchloopConfig {
  return {
    temporalAddress: env['TEMPORAL_ADDRESS'] || 'localhost:7233',
    namespace: env['TEMPORAL_NAMESPACE'] || 'default',
    taskQueue: env['PATCHLOOP_TASK_QUEUE'] || 'patchloop',
    openaiBaseUrl: env['OPENAI_BASE_URL'] || undefined,
    openaiApiKey: env['OPENAI_API_KEY'] || undefined,
    model: env['PATCHLOOP_MODEL'] || 'gpt-4o-mini',
  };
}
