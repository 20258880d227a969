import { z } from 'zod';
import { sharedSchema } from '../context/shared-schema';

/** A principal's name: what `patchloop keys create NAME` takes, a run's input and `PatchloopPrincipal` hold. */
export const PRINCIPAL_NAME = /^[A-Za-z0-9._@-]{1,64}$/;

// A regex of its own: the workflow bundle freezes what modules export, and zod sets a regex's lastIndex.
export const PrincipalName = sharedSchema('runtime/principal#PrincipalName', () =>
  z.string().regex(new RegExp(PRINCIPAL_NAME.source), "1 to 64 letters, digits, '.', '_', '-' or '@'"),
);
