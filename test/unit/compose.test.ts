import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(__dirname, '..', '..');

/** `docker-compose config`: the file parses and resolves (no Docker engine needed for that). */
function composeConfig(env: Record<string, string> = {}): string {
  return execFileSync('docker-compose', ['-f', join(root, 'docker-compose.yml'), 'config'], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
}

describe('docker-compose.yml', () => {
  it('resolves, and the worker publishes its token stream, waits for the namespace and mounts the agents folder', () => {
    const config = composeConfig({ OPENAI_API_KEY: 'sk-test' });
    expect(config).toContain('PATCHLOOP_STREAM_URL: http://localhost:7280');
    expect(config).toMatch(/published: 7280\s+target: 7280/);
    expect(config).toContain('namespace describe');
    expect(config).toMatch(/- \S*\/agents:\/app\/agents:ro/);
    expect(config).toContain('image: temporalio/ui:2.54.1');
  });

  it('runs Redis for the shared token stream, the worker waits for it, and the codec server is an opt-in profile', () => {
    const config = composeConfig({ OPENAI_API_KEY: 'sk-test' });
    expect(config).toContain('REDIS_URL: redis://redis:6379');
    expect(config).toMatch(/redis:\s+condition: service_healthy/);
    // Only started with `--profile codec`.
    expect(config).toMatch(/codec-server:[\s\S]*?profiles:\s+- codec/);
  });

  it('names every image by a pinned tag, never latest', () => {
    const images = [...composeConfig({ OPENAI_API_KEY: 'sk-test' }).matchAll(/image: (\S+)/g)].map(
      (match) => match[1]!,
    );
    expect(images.length).toBeGreaterThanOrEqual(6);
    for (const image of images) expect(image).toMatch(/:(?!latest)[\w.-]+$/);
  });

  it('passes --fake-model (or --agents) to the worker through PATCHLOOP_WORKER_FLAGS', () => {
    expect(composeConfig({ PATCHLOOP_WORKER_FLAGS: '--fake-model' })).toContain('PATCHLOOP_WORKER_FLAGS: --fake-model');
  });
});
