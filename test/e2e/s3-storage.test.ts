import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { StorageDriverClaim } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { validateToolLinkage } from '../../src/context';
import { transcriptQuery } from '../../src/common';
import { callTools, reply } from '../../src/fake-model/steps';
import { S3Driver } from '../../src/storage/s3-driver';
import { motoCredentials as credentials, startMoto, type MotoS3 } from '../support/moto';
import { NO_BOUNDS } from '../../src/runtime';
import { eventually } from '../support/wait';

/** Payloads by reference in an S3-compatible store: moto's S3 API server (test/support/moto.ts). */
let moto: MotoS3 | undefined;
let endpoint = '';
const bucket = 'patchloop-test';

beforeAll(async () => {
  moto = await startMoto(bucket);
  endpoint = moto.endpoint;
});

afterAll(() => {
  moto?.stop();
});

describe('payloads by reference in S3 (moto)', () => {
  it('a batch of 2.2 MB and the whole transcript go to the bucket, content-addressed; the history holds references', async ({
    startWorld,
  }) => {
    const storage = {
      kind: 's3' as const,
      bucket,
      prefix: 'runs/',
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      thresholdBytes: 256 * 1024,
    };
    const world = await startWorld({
      config: { payloadStorage: storage },
      fake: {
        // Twice the same run: its transcript is the same payload, stored once.
        script: [0, 1].flatMap(() => [
          callTools(
            Array.from({ length: 17 }, (_, index) => ({
              id: `r${index}`,
              name: 'repeat',
              arguments: JSON.stringify({ text: 'abcdefghijklmnop', times: 8192 }),
            })),
          ),
          reply('stored'),
        ]),
      },
    });
    try {
      const run = await world.client.start({ agent: 'assistant', input: 'repeat a lot', budget: NO_BOUNDS });
      const result = await run.result();
      expect(result.answer).toBe('stored');
      expect(result.transcript.filter((message) => message['role'] === 'tool')).toHaveLength(17);
      validateToolLinkage(result.transcript);
      // The result left the 2.2 MB transcript out (the client read it by pages); the whole-transcript
      // query answers it by reference.
      expect(await run.workflow.query(transcriptQuery)).toEqual(result.transcript);
      const s3 = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials });
      const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'runs/' }));
      const keys = (listed.Contents ?? []).map((object) => object.Key!);
      expect(keys.length).toBeGreaterThanOrEqual(2);
      expect(keys.every((key) => /^runs\/[0-9a-f]{64}$/.test(key))).toBe(true);
      expect((listed.Contents ?? []).some((object) => (object.Size ?? 0) > 2 * 1024 * 1024)).toBe(true);
      // The 2.2 MB batch result is a reference in history, not content; the result is small.
      expect((await run.historySize()).bytes).toBeLessThan(256 * 1024);
      // S3 dates have whole seconds: a renewal shows only once the clock has passed the first writes' second.
      const newest = Math.max(...(listed.Contents ?? []).map((object) => object.LastModified!.getTime()));
      await eventually(() => (Date.now() >= newest + 1000 ? true : undefined), 5000, 'the next S3 second');
      const again = await world.client.start({ agent: 'assistant', input: 'repeat a lot', budget: NO_BOUNDS });
      expect(await again.result()).toEqual(result);
      expect(await again.workflow.query(transcriptQuery)).toEqual(result.transcript);
      const relisted = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'runs/' }));
      // Only the second batch is new (its timings differ); the identical transcript was not stored
      // again, but its object's age was renewed for lifecycle expiry.
      expect(relisted.Contents!.length).toBe(keys.length + 1);
      // The deduplicated transcript object is one of the first run's, written again since.
      const before = new Map((listed.Contents ?? []).map((object) => [object.Key!, object.LastModified!.getTime()]));
      const renewed = relisted.Contents!.filter(
        (object) => before.has(object.Key!) && object.LastModified!.getTime() > before.get(object.Key!)!,
      );
      expect(renewed.length).toBeGreaterThanOrEqual(1);

      // Claims have the shape of Temporal's S3 drivers (any SDK with a driver named 'patchloop-s3'
      // reads them); claims in the older shape, recorded in existing histories, still read.
      const driver = new S3Driver({
        bucket,
        prefix: 'runs/',
        client: { endpoint, region: 'us-east-1', forcePathStyle: true, credentials },
      });
      const payload = {
        metadata: { encoding: new TextEncoder().encode('json/plain') },
        data: new TextEncoder().encode('"x"'),
      };
      const [claim] = await driver.store({}, [payload]);
      const hash = claim!.claimData['hash_value']!;
      expect(claim!.claimData).toEqual({ bucket, key: `runs/${hash}`, hash_algorithm: 'sha256', hash_value: hash });
      const older = new StorageDriverClaim({ key: hash, bucket, object: `runs/${hash}` });
      const [current, old] = await driver.retrieve({}, [claim!, older]);
      expect([current!.data, old!.data]).toEqual([payload.data, payload.data]);
      const wrong = new StorageDriverClaim({ ...claim!.claimData, hash_value: keys[0]!.slice('runs/'.length) });
      await expect(driver.retrieve({}, [wrong])).rejects.toThrow(/corrupt/);
      world.fake.assertDone();
    } finally {
      await world.close();
    }
  });
});
