import type { ChatRequestBody, Responder } from '../src/fake-model/server';
import { callTools, reply, type FakeStep } from '../src/fake-model/steps';

/** Whether a request is a compaction's summary call: no tools, and the runtime's summary instructions. */
export function isSummaryCall(body: ChatRequestBody): boolean {
  const system = body.messages[0];
  return !body.tools && typeof system?.['content'] === 'string' && system['content'].startsWith('You compact');
}

/** The seven-field summary (spec 5.3) a model that follows the instructions writes. */
export function sevenFieldSummary(pagesRead: number): string {
  return [
    '<context_compaction_summary>',
    '## Goal',
    'Read the report page by page.',
    '## Instruction',
    'Read every page, then say how many were read.',
    '## Discoveries',
    '- every page is about a fox',
    '## Completed',
    `- read pages 1 to ${pagesRead}`,
    '## Current Status',
    `${pagesRead} pages read`,
    '## Likely next work',
    `- read page ${pagesRead + 1}`,
    '## Relevant files/directories',
    '- the report',
    '</context_compaction_summary>',
  ].join('\n');
}

/** The newest page the request shows a result of (the newest call and its result always stay verbatim). */
export function lastPageRead(body: ChatRequestBody): number {
  for (let index = body.messages.length - 1; index >= 0; index -= 1) {
    const message = body.messages[index]!;
    const match = message['role'] === 'tool' ? /^"?page (\d+) of the report/.exec(String(message['content'])) : null;
    if (match) return Number(match[1]);
  }
  return 0;
}

/**
 * A model that reads `pages` pages of `kb` KB, one call per iteration, then answers; summary calls get
 * a seven-field summary (or, through `onSummary`, whatever step a test wants: a hang, a reply that does
 * not follow the format). What it does next comes from the request alone, so a retried request gets
 * the same answer.
 */
export function pageReader(
  pages: number,
  kb: number,
  onSummary: (body: ChatRequestBody, index: number) => FakeStep | undefined = () => undefined,
): Responder {
  return (body, index) => {
    const read = lastPageRead(body);
    if (isSummaryCall(body)) {
      const seen = [...JSON.stringify(body.messages).matchAll(/page (\d+) of the report/g)].map((m) => Number(m[1]));
      return onSummary(body, index) ?? reply(sevenFieldSummary(Math.max(0, ...seen)));
    }
    if (read >= pages) return reply(`I read all ${pages} pages.`);
    const page = read + 1;
    return callTools([{ id: `call_page_${page}`, name: 'read_page', arguments: JSON.stringify({ page, kb }) }]);
  };
}
