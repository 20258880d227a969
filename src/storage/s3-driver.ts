import type * as S3Library from '@aws-sdk/client-s3';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { StorageDriverClaim, type Payload, type StorageDriver } from '@temporalio/common';
import { decodePayload, encodePayload, isPayloadKey } from './payload-bytes';

export interface S3DriverOptions {
  bucket: string;
  /** Prepended to every object key (e.g. `patchloop/payloads/`). */
  prefix?: string;
  /** Passed to the AWS SDK: region, endpoint (MinIO, moto, R2...), credentials. */
  client?: S3ClientConfig;
}

/**
 * Payloads by reference in any S3-compatible store. Objects are named by the SHA-256 of the payload's
 * bytes: an object that exists already is not uploaded again (it is copied onto itself instead, which
 * renews its age for lifecycle expiry rules), and a retrieved one is checked.
 */
export class S3Driver implements StorageDriver {
  readonly name = 'patchloop-s3';
  readonly type = 'patchloop.s3';
  /** The AWS SDK, loaded at first use: only processes that store payloads in S3 load it. */
  private sdk: Promise<{ s3: S3Client; library: typeof S3Library }> | undefined;

  constructor(private readonly options: S3DriverOptions) {}

  private client(): Promise<{ s3: S3Client; library: typeof S3Library }> {
    this.sdk ??= import('@aws-sdk/client-s3').then((library) => ({
      library,
      s3: new library.S3Client(this.options.client ?? {}),
    }));
    return this.sdk;
  }

  async store(context: { abortSignal?: AbortSignal }, payloads: Payload[]): Promise<StorageDriverClaim[]> {
    const abortSignal = context.abortSignal;
    const { bucket } = this.options;
    const { s3, library } = await this.client();
    return Promise.all(
      payloads.map(async (payload) => {
        const { key, bytes } = encodePayload(payload);
        const Key = this.objectKey(key);
        if (await this.has(Key, abortSignal)) {
          // CopySource is a URL path: each segment of the key encoded, the slashes kept.
          const source = `${encodeURIComponent(bucket)}/${Key.split('/').map(encodeURIComponent).join('/')}`;
          const renew = new library.CopyObjectCommand({
            Bucket: bucket,
            Key,
            CopySource: source,
            MetadataDirective: 'REPLACE',
          });
          await s3.send(renew, { abortSignal });
        } else {
          await s3.send(new library.PutObjectCommand({ Bucket: bucket, Key, Body: bytes }), { abortSignal });
        }
        // The claim names the object itself (a later change of bucket or prefix leaves old references
        // readable) and its SHA-256, in the shape of Temporal's own S3 drivers: an SDK configured with
        // this bucket and a driver named 'patchloop-s3' reads it (docs/reading-results.md).
        return new StorageDriverClaim({ bucket, key: Key, hash_algorithm: 'sha256', hash_value: key });
      }),
    );
  }

  async retrieve(context: { abortSignal?: AbortSignal }, claims: StorageDriverClaim[]): Promise<Payload[]> {
    const { s3, library } = await this.client();
    return Promise.all(
      claims.map(async (claim) => {
        const { bucket, object, hash } = this.located(claim.claimData);
        const get = new library.GetObjectCommand({ Bucket: bucket, Key: object });
        const stored = await s3.send(get, { abortSignal: context.abortSignal });
        return decodePayload(hash, await stored.Body!.transformToByteArray());
      }),
    );
  }

  /**
   * Where a claim's payload is and the SHA-256 it must have: claims in the shape of Temporal's S3
   * drivers (`key` is the object, `hash_value` its hash; written by this driver now, or by another
   * SDK's S3 driver named 'patchloop-s3'), and the older shape (`key` is the hash, `object` the object).
   */
  private located(claim: Record<string, string>): { bucket: string; object: string; hash: string } {
    const bucket = claim['bucket'] ?? this.options.bucket;
    const hash = claim['hash_value'] !== undefined ? claim['hash_value'] : claim['key'];
    const object = claim['hash_value'] !== undefined ? claim['key'] : (claim['object'] ?? this.objectKey(hash ?? ''));
    const algorithm = claim['hash_algorithm'] ?? 'sha256';
    if (algorithm !== 'sha256' || !isPayloadKey(hash) || object === undefined || object.length === 0)
      throw new Error(`not a payload claim of ${this.name}: ${JSON.stringify(claim)}`);
    return { bucket, object, hash };
  }

  /** Whether the object exists. Without permission to tell (403 without s3:ListBucket), write it. */
  private async has(objectKey: string, abortSignal: AbortSignal | undefined): Promise<boolean> {
    const { s3, library } = await this.client();
    try {
      await s3.send(new library.HeadObjectCommand({ Bucket: this.options.bucket, Key: objectKey }), { abortSignal });
      return true;
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 404 || status === 403) return false;
      throw error;
    }
  }

  private objectKey(key: string): string {
    return `${this.options.prefix ?? ''}${key}`;
  }
}
