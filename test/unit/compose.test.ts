import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const root = join(__dirname, '..', '..');

/** The variables docker-compose.yml requires: each is a secret, and none has a default. */
const SECRETS = [
  'POSTGRES_PASSWORD',
  'S3_SECRET_ACCESS_KEY',
  'REDIS_PASSWORD',
  'PATCHLOOP_STREAM_SECRET',
  'PATCHLOOP_CODEC_TOKEN',
] as const;

const secretValues = () => Object.fromEntries(SECRETS.map((name) => [name, randomBytes(16).toString('hex')]));

/** An empty .env: an .env file in the checkout must not supply a secret either. */
const emptyEnvFile = join(mkdtempSync(join(tmpdir(), 'compose-env-')), 'empty.env');
writeFileSync(emptyEnvFile, '');

/**
 * `docker-compose config` (Debian's docker-compose, which scripts/setup.sh installs; no Docker engine
 * needed): the file resolved, or compose's refusal. Only PATH and the given variables reach it.
 */
function composeConfig(env: Record<string, string>): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) =>
    execFile(
      'docker-compose',
      ['--env-file', emptyEnvFile, '-f', join(root, 'docker-compose.yml'), 'config'],
      { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', ...env } },
      (error, stdout, stderr) => {
        // Missing docker-compose fails the test (run bash scripts/setup.sh), never skips it.
        if (error && typeof error.code !== 'number') reject(new Error(`docker-compose: ${error.message}`));
        else resolve({ status: error ? (error.code as number) : 0, stdout, stderr });
      },
    ),
  );
}

async function rendered(env: Record<string, string> = {}): Promise<string> {
  const result = await composeConfig({ ...secretValues(), ...env });
  expect(result.status, result.stderr).toBe(0);
  return result.stdout;
}

/** The file rendered with random secrets and nothing else set, once for the tests that only read it. */
const defaults = { secrets: secretValues(), config: '' };
beforeAll(async () => {
  defaults.config = await rendered(defaults.secrets);
});

/** Each service's lines in the rendered file, by name. */
function services(config: string): Map<string, string> {
  const blocks = new Map<string, string>();
  const body = config.slice(config.indexOf('\nservices:\n') + '\nservices:\n'.length);
  let name: string | undefined;
  for (const line of body.split('\n')) {
    if (/^\S/.test(line)) break;
    const header = /^ {2}(\S+):$/.exec(line);
    if (header) name = header[1]!;
    else if (name) blocks.set(name, `${blocks.get(name) ?? ''}${line}\n`);
  }
  return blocks;
}

/** Published ports as `address:published:target`, service by service. */
function publishedPorts(config: string): Array<{ service: string; address: string; port: string }> {
  return [...services(config)].flatMap(([service, block]) =>
    [...block.matchAll(/^\s+- ([^\s:]+):(\d+):(\d+)\/tcp$/gm)].map((match) => ({
      service,
      address: match[1]!,
      port: match[2]!,
    })),
  );
}

describe('docker-compose.yml', () => {
  it('refuses to start without each secret, naming it and how to make one', async () => {
    const cases = SECRETS.map((missing) => {
      const others = secretValues();
      delete others[missing];
      return { missing, env: others };
    });
    // Empty counts as missing.
    cases.push({ missing: 'REDIS_PASSWORD', env: { ...secretValues(), REDIS_PASSWORD: '' } });
    const results = await Promise.all([composeConfig({}), ...cases.map(({ env }) => composeConfig(env))]);
    expect(results[0]!.status).not.toBe(0);
    cases.forEach(({ missing }, index) => {
      const refused = results[index + 1]!;
      expect([missing, refused.status]).toEqual([missing, 1]);
      expect(refused.stderr).toContain(`set ${missing} (`);
      expect(refused.stderr).toContain('openssl rand -hex 32');
    });
  });

  it('renders with the secrets set, using them and no built-in password', () => {
    for (const value of Object.values(defaults.secrets)) expect(defaults.config).toContain(value);
    expect(defaults.config).not.toMatch(/change-me|patchloop-secret|POSTGRES_PASSWORD: temporal|_PWD: temporal/);
  });

  it('publishes every port on 127.0.0.1 unless PATCHLOOP_BIND_ADDRESS says otherwise', async () => {
    const ports = publishedPorts(defaults.config);
    expect(ports.map(({ service, port }) => `${service}:${port}`).sort()).toEqual([
      'codec-server:8888',
      'redis:6379',
      'seaweedfs:8333',
      'temporal-ui:8080',
      'temporal:7233',
      'worker:7280',
    ]);
    for (const { address } of ports) expect(address).toBe('127.0.0.1');
    // No published port without an address (that would be every interface).
    expect(defaults.config).not.toMatch(/published:/);
    const opened = publishedPorts(await rendered({ PATCHLOOP_BIND_ADDRESS: '10.1.2.3' }));
    expect(opened.length).toBe(ports.length);
    for (const { address } of opened) expect(address).toBe('10.1.2.3');
  });

  it('checks health with what each image ships, and starts each service after what it needs', () => {
    const blocks = services(defaults.config);
    expect(blocks.get('postgresql')).toContain('pg_isready -U temporal');
    // The Temporal server image has no temporal CLI: a TCP check; the namespace job waits for SERVING.
    expect(blocks.get('temporal')).toMatch(/- nc\s+- -z\s+- 127.0.0.1\s+- '7233'/);
    expect(blocks.get('seaweedfs')).toContain('http://127.0.0.1:8333/healthz');
    expect(blocks.get('redis')).toMatch(/- redis-cli\s+- ping/);
    expect(blocks.get('temporal')).toMatch(/temporal-schema:\s+condition: service_completed_successfully/);
    // Listening on 0.0.0.0 needs a broadcast address (1.32 refuses to start without one): the script sets it.
    expect(blocks.get('temporal')).toMatch(/entrypoint:\s+- \/bin\/sh\s+- \/patchloop\/start-server.sh/);
    expect(blocks.get('temporal')).toContain('BIND_ON_IP: 0.0.0.0');
    expect(blocks.get('temporal-namespace')).toMatch(/temporal:\s+condition: service_healthy/);
    expect(blocks.get('worker')).toMatch(/temporal-namespace:\s+condition: service_completed_successfully/);
    expect(blocks.get('worker')).toMatch(/redis:\s+condition: service_healthy/);
    expect(blocks.get('worker')).toMatch(/seaweedfs:\s+condition: service_healthy/);
  });

  it('the worker publishes its token stream, uses Redis with its password, and mounts the agents folder', () => {
    const worker = services(defaults.config).get('worker')!;
    expect(worker).toContain('PATCHLOOP_STREAM_URL: http://localhost:7280');
    expect(worker).toContain(`REDIS_URL: redis://:${defaults.secrets['REDIS_PASSWORD']}@redis:6379`);
    expect(worker).toMatch(/- \S*\/agents:\/app\/agents:ro/);
  });

  it('the codec server is an opt-in profile that gets its token from PATCHLOOP_CODEC_TOKEN', () => {
    const codec = services(defaults.config).get('codec-server')!;
    expect(codec).toMatch(/profiles:\s+- codec/);
    expect(codec).toContain(`PATCHLOOP_CODEC_TOKEN: ${defaults.secrets['PATCHLOOP_CODEC_TOKEN']}`);
  });

  it('names every image by a pinned tag, never latest', () => {
    const images = [...defaults.config.matchAll(/image: (\S+)/g)].map((match) => match[1]!);
    expect(images.length).toBeGreaterThanOrEqual(7);
    for (const image of images) expect(image).toMatch(/:(?!latest)[\w.-]+$/);
    expect(images).toContain('temporalio/ui:2.54.1');
  });

  it('passes --fake-model (or --agents) to the worker through PATCHLOOP_WORKER_FLAGS', async () => {
    expect(await rendered({ PATCHLOOP_WORKER_FLAGS: '--fake-model' })).toContain(
      'PATCHLOOP_WORKER_FLAGS: --fake-model',
    );
  });
});
