import { ExternalStorage, type DataConverter, type StorageDriver } from '@temporalio/common';
import { LocalDirectoryDriver } from './local-directory-driver';
import { S3Driver } from './s3-driver';
import type { EncryptionSettings, PayloadStorageSettings } from '../config/environment';
import { EncryptionCodec } from './encryption-codec';

/**
 * The data converter every patchloop worker and client uses: payloads over the threshold (a run's
 * result, a large tool batch, images, a fork's context, continue-as-new state) travel by reference
 * through Temporal's External Storage, so no payload meets the 2 MB limit. Every worker and client of a
 * deployment needs the same storage: a reference can only be read where its payload is. With a key,
 * every payload is encrypted (AES-256-GCM) before it leaves the process.
 */
export function patchloopDataConverter(
  settings: PayloadStorageSettings,
  encryption?: EncryptionSettings,
): DataConverter {
  // Temporal encodes (encrypts) before it stores: the store only ever holds ciphertext.
  const codecs = encryption ? { payloadCodecs: [new EncryptionCodec(encryption)] } : {};
  if (settings.kind === 'off') return codecs;
  return {
    ...codecs,
    externalStorage: new ExternalStorage({
      drivers: [driverFor(settings)],
      payloadSizeThreshold: settings.thresholdBytes,
    }),
  };
}

function driverFor(settings: Exclude<PayloadStorageSettings, { kind: 'off' }>): StorageDriver {
  if (settings.kind === 'local') return new LocalDirectoryDriver(settings.directory);
  return new S3Driver({
    bucket: settings.bucket,
    prefix: settings.prefix,
    client: {
      region: settings.region,
      forcePathStyle: settings.forcePathStyle,
      ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    },
  });
}
