import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFromEnvironment, connectionOptions } from '../../src/config/environment';

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
