import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFromEnvironment, connectionOptions, workerTuningFromEnvironment } from '../../src/config/environment';

describe("Temporal's environment configuration", () => {
  it('reads a profile of the config file, and TEMPORAL_* variables override it', () => {
    const folder = mkdtempSync(join(tmpdir(), 'patchloop-envconfig-'));
    const file = join(folder, 'temporal.toml');
    writeFileSync(
      file,
      [
        '[profile.cloud]',
        'address = "my-ns.a1b2c.tmprl.cloud:7233"',
        'namespace = "my-ns.a1b2c"',
        'api_key = "from-the-file"',
        '',
      ].join('\n'),
    );
    const fromFile = configFromEnvironment({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'cloud' });
    expect(fromFile.temporalAddress).toBe('my-ns.a1b2c.tmprl.cloud:7233');
    expect(fromFile.namespace).toBe('my-ns.a1b2c');
    // An API key implies TLS, as Temporal Cloud needs.
    expect(connectionOptions(fromFile)).toMatchObject({
      address: 'my-ns.a1b2c.tmprl.cloud:7233',
      apiKey: 'from-the-file',
    });
    expect(fromFile.temporalConnection?.tls).toBeTruthy();
    const overridden = configFromEnvironment({
      TEMPORAL_CONFIG_FILE: file,
      TEMPORAL_PROFILE: 'cloud',
      TEMPORAL_API_KEY: 'from-the-environment',
      TEMPORAL_NAMESPACE: 'other',
    });
    expect(overridden.temporalConnection?.apiKey).toBe('from-the-environment');
    expect(overridden.namespace).toBe('other');
  });

  it('defaults to a plain local connection', () => {
    const config = configFromEnvironment({ TEMPORAL_CONFIG_FILE: join(tmpdir(), 'no-such-temporal.toml') });
    expect(connectionOptions(config)).toEqual({ address: 'localhost:7233' });
    expect(config.namespace).toBe('default');
  });
});

describe('worker tuning from the environment', () => {
  it('reads whole numbers, heap growth from 0 (V8’s own) to 1000, and names the variable of a bad one', () => {
    expect(
      workerTuningFromEnvironment({
        PATCHLOOP_MAX_CACHED_WORKFLOWS: '250',
        PATCHLOOP_MAX_CONCURRENT_ACTIVITIES: '40',
        PATCHLOOP_HEAP_GROWING_PERCENT: '0',
      }),
    ).toEqual({ maxCachedWorkflows: 250, maxConcurrentActivityTaskExecutions: 40, heapGrowingPercent: 0 });
    expect(workerTuningFromEnvironment({ PATCHLOOP_HEAP_GROWING_PERCENT: '' })).toEqual({});
    expect(() => workerTuningFromEnvironment({ PATCHLOOP_HEAP_GROWING_PERCENT: '12.5' })).toThrow(
      "PATCHLOOP_HEAP_GROWING_PERCENT must be a whole number from 0 to 1000, not '12.5'",
    );
    expect(() => workerTuningFromEnvironment({ PATCHLOOP_HEAP_GROWING_PERCENT: '-1' })).toThrow(/from 0 to 1000/);
    expect(() => workerTuningFromEnvironment({ PATCHLOOP_MAX_CACHED_WORKFLOWS: '0' })).toThrow(/from 1/);
  });
});
