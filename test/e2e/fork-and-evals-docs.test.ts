import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { shellWords } from '../support/shell-words';
import { it } from '../support/fixtures';
import { repositoryRoot } from '../../support/repository';
import { runCli, startCliWorker } from '../support/cli';

describe('docs/fork-and-evals.md', () => {
  it('runs its commands on the weather example as the page writes them, and prints what the page shows', async ({
    world,
  }) => {
    const example = join(repositoryRoot, 'examples', 'weather-agent');
    const page = readFileSync(join(repositoryRoot, 'docs', 'fork-and-evals.md'), 'utf8');
    const blocks = [...page.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((match) => ({
      language: match[1]!,
      text: match[2]!,
    }));
    // The page's dataset is the example's file.
    const dataset = readFileSync(join(example, 'weather.eval.yaml'), 'utf8');
    expect(dataset).toContain(blocks.find((block) => block.language === 'yaml')!.text);
    const lines = blocks.filter((block) => block.language === 'bash').flatMap((block) => block.text.trim().split('\n'));
    expect(lines).toHaveLength(6);
    const env = {
      TEMPORAL_ADDRESS: world.config.temporalAddress,
      // A queue of its own: the page's worker serves only the example's agents.
      PATCHLOOP_TASK_QUEUE: `${world.config.taskQueue}-weather`,
      OPENAI_API_KEY: '',
      OPENAI_BASE_URL: '',
    };
    const [workerLine, ...commands] = lines;
    const workerArgs = shellWords(workerLine!);
    expect(workerArgs.slice(0, 3)).toEqual(['npx', 'patchloop', 'worker']);
    const worker = await startCliWorker(workerArgs.slice(3), env, { cwd: example });
    const folder = mkdtempSync(join(tmpdir(), 'patchloop-fork-docs-'));
    try {
      for (const line of commands) {
        const argv = shellWords(line);
        expect(argv.slice(0, 2)).toEqual(['npx', 'patchloop']);
        const args = argv
          .slice(2)
          .map((word) =>
            word === 'weather.eval.yaml' ? join(example, word) : word === 'report.xml' ? join(folder, word) : word,
          );
        const ran = await runCli(args, env);
        const shown = blocks[blocks.findIndex((block) => block.text.includes(line)) + 1];
        if (args[0] === 'eval') {
          expect([line, ran.code]).toEqual([line, 1]);
          expect([shown!.language, ran.stdout]).toEqual(['text', shown!.text]);
          expect(readFileSync(join(folder, 'report.xml'), 'utf8')).toContain('<testcase name="Paris, in Fahrenheit"');
          continue;
        }
        expect([line, ran.code]).toEqual([line, 0]);
        if (args[0] === 'show' && args[1] === 'weather-paris-again') {
          // The Temporal UI's address is the test server's.
          const expected = shown!.text
            .trim()
            .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
            .replace('http://localhost:8233', 'http://[^/]+');
          expect(ran.stdout).toMatch(new RegExp(expected));
          expect(ran.stdout).toContain('assistant It is sunny in Paris today, 24 °C.');
        }
        if (args[0] === 'run') await world.client.run('weather-paris').result();
        if (args[0] === 'fork')
          expect((await world.client.run('weather-paris-again').result()).status).toBe('completed');
      }
      const original = await runCli(['show', 'weather-paris'], env);
      expect(original.stdout).toMatch(/fork at iteration 1: completed\s+weather-paris-again/);
    } finally {
      await worker.stop();
    }
  });
});
