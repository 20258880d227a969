import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../src/worker/free-port';
import { testVenv } from '../../support/repository';
import { eventually } from './wait';

export const motoCredentials = { accessKeyId: 'test', secretAccessKey: 'test' };

export interface MotoS3 {
  endpoint: string;
  bucket: string;
  s3: S3Client;
  stop(): void;
}

/**
 * An S3-compatible store for payloads by reference: moto's S3 API server (from PyPI, installed by
 * scripts/setup.sh), started on a free port, with one bucket. A missing binary fails the test, it
 * does not skip. The worker's S3 driver finds the credentials the usual AWS SDK way (environment).
 */
export async function startMoto(bucket: string): Promise<MotoS3> {
  const binary = join(testVenv, 'bin', 'moto_server');
  if (!existsSync(binary)) throw new Error(`moto_server not found at ${binary}: run "bash scripts/setup.sh"`);
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const moto: ChildProcess = spawn(binary, ['-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  const s3 = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: motoCredentials });
  try {
    await eventually(() => s3.send(new CreateBucketCommand({ Bucket: bucket })).then(() => true), 30_000, 'moto S3 up');
  } catch (error) {
    moto.kill('SIGTERM');
    throw error;
  }
  process.env['AWS_ACCESS_KEY_ID'] = motoCredentials.accessKeyId;
  process.env['AWS_SECRET_ACCESS_KEY'] = motoCredentials.secretAccessKey;
  return { endpoint, bucket, s3, stop: () => moto.kill('SIGTERM') };
}
