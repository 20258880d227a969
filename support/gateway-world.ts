import { spawn } from 'node:child_process';
import { z } from 'zod';
import type { AgentDefinitionInput } from '../src/runtime';
import { defineTool } from '../src/tools/define-tool';
import { repositoryRoot } from './repository';

/** A process to its end: its exit status and output. */
export function runProcess(program: string, args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(program, args, { cwd: repositoryRoot, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * The gateway tests' world: an agent that answers about cities with `lookup` and pays with `transfer`
 * (which waits for approval); `transfers` records every payment the tool made, in order.
 */
export function citiesWorld(): {
  transfers: Array<{ to: string; amount: number }>;
  tools: ReturnType<typeof defineTool>[];
  agents: AgentDefinitionInput[];
} {
  const transfers: Array<{ to: string; amount: number }> = [];
  const tools = [
    defineTool({
      name: 'lookup',
      description: 'Looks a city up.',
      parameters: z.object({ city: z.string() }),
      execute: ({ city }) => `${city}: capital of France`,
    }),
    defineTool({
      name: 'transfer',
      description: 'Sends money.',
      parameters: z.object({ to: z.string(), amount: z.number() }),
      execute: (args) => {
        transfers.push(args);
        return `sent ${args.amount} to ${args.to}`;
      },
    }),
  ];
  const agents: AgentDefinitionInput[] = [
    {
      name: 'assistant',
      instructions: 'You answer questions about cities.\nBe brief.',
      tools: ['lookup', 'transfer'],
      needs_approval: ['transfer'],
    },
  ];
  return { transfers, tools, agents };
}
