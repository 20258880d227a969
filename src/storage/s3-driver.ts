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
    return Promise.all(
      payloads.map(async (payload) => {
        const { key, bytes } = encodePayload(payload);
        const Key = this.objectKey(key);
        if (await this.has(key, abortSignal)) {
          const source = `${this.options.bucket}/${Key}`;
          const renew = new CopyObjectCommand({
            Bucket: this.options.bucket,
            Key,
            CopySource: source,
            MetadataDirective: 'REPLACE',
          });
          await this.s3.send(renew, { abortSignal });
        } else {
          await this.s3.send(new PutObjectCommand({ Bucket: this.options.bucket, Key, Body: bytes }), { abortSignal });
        }
        return new StorageDriverClaim({ key });
      }),
    );
  }

  async retrieve(context: { abortSignal?: AbortSignal }, claims: StorageDriverClaim[]): Promise<Payload[]> {
    return Promise.all(
      claims.map(async (claim) => {
        const key = claim.claimData['key'];
        if (!isPayloadKey(key))
          throw new Error(`not a payload claim of ${this.name}: ${JSON.stringify(claim.claimData)}`);
        const get = new GetObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key) });
        const object = await this.s3.send(get, { abortSignal: context.abortSignal });
        return decodePayload(key, await object.Body!.transformToByteArray());
      }),
    );
  }

  private async has(key: string, abortSignal: AbortSignal | undefined): Promise<boolean> {
    try {
      await this.s3.send(new HeadObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key) }), {
        abortSignal,
      });
      return true;
    } catch (error) {
      if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
      throw error;
    }
  }

  private objectKey(key: string): string {
    return `${this.options.prefix ?? ''}${key}`;
  }
}
