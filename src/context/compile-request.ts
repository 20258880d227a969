import { z } from 'zod';
import { Message } from './messages';
import { Mutations } from './mutations';
import { PromptContract } from './prompt-contract';
import { SelfRefSnapshot } from './selfref-snapshot';
import { sharedSchema } from './shared-schema';

/**
 * One saved compile state, in the conformance-vector format. Other keys (`expected`, `id`, ...) are
 * ignored so a vector file can be compiled as it is.
 */
export const CompileRequest = sharedSchema('context/compile-request#CompileRequest', () =>
  z.looseObject({
    transcript: z.array(Message).default([]),
    mutations: Mutations.default([]),
    prompt_contract: PromptContract.default(PromptContract.parse({})),
    selfref_snapshot: SelfRefSnapshot.nullable().default(null),
  }),
);
export type CompileRequest = z.infer<typeof CompileRequest>;
