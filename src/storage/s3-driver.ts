import {
  CopyObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
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
  private readonly s3: S3Client;

  constructor(private readonly options: S3DriverOptions) {
    this.s3 = new S3Client(options.client ?? {});
  }

  async store(context: { abortSignal?: AbortSignal }, payloads: Payload[]): Promise<StorageDriverClaim[]> {
    const abortSignal = context.abortSignal;
    const { bucket } = this.options;
    return Promise.all(
      payloads.map(async (payload) => {
        const { key, bytes } = encodePayload(payload);
        const Key = this.objectKey(key);
        if (await this.has(Key, abortSignal)) {
          // CopySource is a URL path: each segment of the key encoded, the slashes kept.
          const source = `${encodeURIComponent(bucket)}/${Key.split('/').map(encodeURIComponent).join('/')}`;
          const renew = new CopyObjectCommand({
            Bucket: bucket,
            Key,
            CopySource: source,
            MetadataDirective: 'REPLACE',
          });
          await this.s3.send(renew, { abortSignal });
        } else {
          await this.s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body: bytes }), { abortSignal });
        }
        // The claim names the object itself: a later change of bucket or prefix leaves old references readable.
        return new StorageDriverClaim({ key, bucket, object: Key });
      }),
    );
  }

  async retrieve(context: { abortSignal?: AbortSignal }, claims: StorageDriverClaim[]): Promise<Payload[]> {
    return Promise.all(
      claims.map(async (claim) => {
        const { key, bucket = this.options.bucket, object = this.objectKey(key ?? '') } = claim.claimData;
        if (!isPayloadKey(key) || !object.endsWith(key))
          throw new Error(`not a payload claim of ${this.name}: ${JSON.stringify(claim.claimData)}`);
        const get = new GetObjectCommand({ Bucket: bucket, Key: object });
        const stored = await this.s3.send(get, { abortSignal: context.abortSignal });
        return decodePayload(key, await stored.Body!.transformToByteArray());
      }),
    );
  }

  /** Whether the object exists. Without permission to tell (403 without s3:ListBucket), write it. */
  private async has(objectKey: string, abortSignal: AbortSignal | undefined): Promise<boolean> {
    try {
      await this.s3.send(new HeadObjectCommand({ Bucket: this.options.bucket, Key: objectKey }), { abortSignal });
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
