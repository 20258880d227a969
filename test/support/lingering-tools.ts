/**
 * A tool for `patchloop worker --tools` that ignores its abort signal: its timer holds the worker's
 * process for two minutes, after the worker itself has stopped.
 */
import { z } from 'zod';
import { defineTool } from '../../src/tools/define-tool';

export const tools = [
  defineTool({
    name: 'linger',
    description: 'Waits two minutes, whatever happens.',
    parameters: z.object({}),
    execute: async () => {
      process.stdout.write('linger started\n');
      await new Promise((resolve) => setTimeout(resolve, 120_000));
      return 'done lingering';
    },
  }),
];
