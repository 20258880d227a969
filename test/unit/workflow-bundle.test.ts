import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { bundleInChildProcess, childNodeOptions, forkBundler, PARENT_GONE_EXIT_CODE } from '../../src/worker/bundle';
import { workflowBundleOptions } from '../../src/worker/create-worker';
import { workflowBundle } from '../support/temporal';

describe('workflow bundle', () => {
  it('bundles the workflow-safe entry (patchloop/workflows) with nothing the sandbox lacks', async () => {
    const { code } = await bundleWorkflowCode({
      workflowsPath: join(__dirname, '..', '..', 'src', 'workflow.ts'),
      logger: new DefaultLogger('WARN'),
    });
    expect(code).toContain('userMessageUpdate');
    expect(code).not.toMatch(/node_modules\/openai\//);
    expect(code).not.toMatch(/src\/(activities|client|worker|cli|config|streaming)\//);
  });

  it('bundles src/workflows for the sandbox without provider clients or Node built-ins', async () => {
    const { code } = await workflowBundle();
    expect(code.length).toBeGreaterThan(10_000);
    expect(code).toContain('agentRun');
    expect(code).not.toMatch(/node_modules\/openai\//);
    expect(code).not.toMatch(/require\(["']node:/);
    expect(code).not.toMatch(/src\/activities\//);
  });

  it('is built in a child process as the worker builds it, with the preloaded workflows', async () => {
    const { code } = await bundleInChildProcess(workflowBundleOptions());
    expect(code).toContain('agentRun');
    expect(/preloadModules = function preloadModules\(\) \{([^}]*)\}/.exec(code)?.[1]).toContain(
      './src/workflows/index.ts',
    );
  });

  it('reports a bundling failure in the child as one line, without a stack', async () => {
    const failure = await bundleInChildProcess({ workflowsPath: join(__dirname, 'no-such-workflows.ts') }).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(failure?.message).toMatch(/^could not bundle the workflows: .*no-such-workflows\.ts/);
    expect(failure?.message).not.toContain('\n');
  });

  it('stops building when its parent goes away before the bundle is built', async () => {
    const child = forkBundler();
    const exited = once(child, 'exit');
    child.send(workflowBundleOptions());
    // What the child sees when its parent dies or is killed alone: the IPC channel closes.
    child.disconnect();
    const [code] = (await exited) as [number | null];
    expect(code).toBe(PARENT_GONE_EXIT_CODE);
  });

  it('gives the child this process’s loaders and memory options, not code to evaluate or a debugger', () => {
    expect(
      childNodeOptions([
        '--import',
        'tsx',
        '-e',
        'startWorker()',
        '--max-old-space-size=4096',
        '--inspect-brk=9229',
        '--print=1',
        '--conditions',
        'node',
      ]),
    ).toEqual(['--import', 'tsx', '--max-old-space-size=4096', '--conditions', 'node']);
  });
});
