import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { defineTool } from './define-tool';

export const addTool = defineTool({
  name: 'add',
  description: 'Add two numbers and return the sum.',
  parameters: z.object({ a: z.number(), b: z.number() }),
  bestPractices: ['Use for exact arithmetic instead of computing in your head.'],
  fast: true,
  execute: ({ a, b }) => a + b,
});

export const waitTool = defineTool({
  name: 'wait',
  description: 'Wait for a number of seconds, then report it.',
  parameters: z.object({ seconds: z.number().nonnegative().max(3600) }),
  timeoutSeconds: 3600,
  execute: async ({ seconds }, { signal }) => {
    await sleep(seconds * 1000, undefined, { signal });
    return `waited ${seconds} s`;
  },
});

export const repeatTool = defineTool({
  name: 'repeat',
  description: 'Repeat a text a number of times.',
  parameters: z.object({ text: z.string(), times: z.number().int().nonnegative().max(10_000) }),
  fast: true,
  execute: ({ text, times }) => text.repeat(times),
});

export const exampleTools = [addTool, waitTool, repeatTool];
