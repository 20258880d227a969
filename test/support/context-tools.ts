import { z } from 'zod';
import { defineTool } from '../../src/tools/define-tool';

/** A page of `kb` kilobytes whose first line names it: what a long-running agent reads, one per iteration. */
export function pageText(page: number, kb: number): string {
  const line = `page ${page}: the quick brown fox jumps over the lazy dog. `;
  return `page ${page} of the report\n${line.repeat(Math.ceil((kb * 1024) / line.length))}`.slice(0, kb * 1024);
}

export const tools = [
  defineTool({
    name: 'read_page',
    description: 'Reads one page of the report.',
    parameters: z.object({ page: z.number().int().positive(), kb: z.number().positive() }),
    execute: async ({ page, kb }) => pageText(page, kb),
  }),
];
