import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { repositoryRoot } from './repository';

const example = join(repositoryRoot, 'examples', 'ag-ui-chat');

/**
 * examples/ag-ui-chat's server (`npm start` there: tsx server.ts) on a free port, in front of a gateway
 * with a key: its URL, and a stop.
 */
export async function startChatPage(gatewayUrl: string, key: string): Promise<{ url: string; stop(): Promise<void> }> {
  const child = spawn(join(example, 'node_modules', '.bin', 'tsx'), ['server.ts'], {
    cwd: example,
    env: { ...process.env, PATCHLOOP_GATEWAY: gatewayUrl, PATCHLOOP_KEY: key, PORT: '0' },
  });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const read = (data: Buffer) => {
      output += data.toString();
      const found = /AG-UI chat at (\S+)/.exec(output)?.[1];
      if (found) resolve(found);
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('exit', (code) => reject(new Error(`the chat page's server exited (${code}):\n${output}`)));
  });
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Asks the agent on the page; resolves once the page shows an answer containing `answer` or an approval to give. */
export async function ask(page: Page, question: string, until: { answer: string } | 'approval'): Promise<void> {
  await page.locator('#text').fill(question);
  await page.locator('#send').click();
  if (until === 'approval') await page.locator('.approval').waitFor();
  else await page.locator('.message.assistant', { hasText: until.answer }).last().waitFor();
}

/** Answers the page's approval card; resolves once the answer that follows shows. */
export async function answerApproval(page: Page, approve: boolean, answer: string): Promise<void> {
  await page.locator('.approval button', { hasText: approve ? 'Approve' : 'Reject' }).click();
  await page.locator('.message.assistant', { hasText: answer }).last().waitFor();
}
