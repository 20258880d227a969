import { type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { EncryptionSettings } from '../config/environment';
import { failure, FailureType } from '../common';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM over the whole serialized payload (its metadata too, so the encoding of the plaintext
 * does not leak): `data` = 12-byte IV, ciphertext, 16-byte tag; the key id rides in the metadata so a
 * rotated key still decrypts what it wrote. Composes with External Storage: Temporal encodes first and
 * stores the ciphertext.
 */
export class EncryptionCodec implements PayloadCodec {
  private readonly keys: Map<string, Uint8Array>;

  constructor(private readonly settings: EncryptionSettings) {
    this.keys = new Map([settings.active, ...settings.previous].map((entry) => [entry.id, entry.key]));
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', this.settings.active.key, iv);
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const data = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: {
          encoding: Buffer.from(ENCRYPTED_ENCODING),
          [KEY_ID]: Buffer.from(this.settings.active.id),
        },
        data,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      if (Buffer.from(payload.metadata?.['encoding'] ?? []).toString() !== ENCRYPTED_ENCODING) return payload;
      const id = Buffer.from(payload.metadata?.[KEY_ID] ?? []).toString();
      const key = this.keys.get(id);
      // Not retryable by waiting: this worker (or codec server) lacks the key.
      if (!key)
        throw failure(
          FailureType.EncryptionKeyUnknown,
          `payload encrypted with key '${id}', which this process does not hold (PATCHLOOP_ENCRYPTION_PREVIOUS_KEYS)`,
        );
      const data = Buffer.from(payload.data ?? []);
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      const plain = Buffer.concat([
        decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
        decipher.final(),
      ]);
      return temporal.api.common.v1.Payload.decode(plain);
    });
  }
}
