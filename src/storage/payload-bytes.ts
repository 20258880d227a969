import type { Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { createHash } from 'node:crypto';

const PayloadProto = temporal.api.common.v1.Payload;

/** A payload as the bytes a store keeps, and the SHA-256 (hex) that names them: stored once, however often sent. */
export function encodePayload(payload: Payload): { key: string; bytes: Uint8Array } {
  const bytes = PayloadProto.encode(payload).finish();
  return { key: createHash('sha256').update(bytes).digest('hex'), bytes };
}

/** Bytes back to the payload, checked against the key they were stored under. */
export function decodePayload(key: string, bytes: Uint8Array): Payload {
  const actual = createHash('sha256').update(bytes).digest('hex');
  if (actual !== key) throw new Error(`stored payload ${key} is corrupt (its bytes hash to ${actual})`);
  return PayloadProto.decode(bytes) as Payload;
}

export function isPayloadKey(key: unknown): key is string {
  return typeof key === 'string' && /^[0-9a-f]{64}$/.test(key);
}
