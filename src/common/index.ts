/**
 * The contract between patchloop's workflows and everything that talks to them: the messages a run
 * answers (signals, queries, updates), the failure types activities throw and workflows decide on, and
 * the sinks workflows report to. Workflow-safe: it imports only `@temporalio/workflow` definitions,
 * `ApplicationFailure` from `@temporalio/common`, and the pure runtime model.
 */
export * from './definitions';
export * from './failure-types';
export type * from './sinks';
export * from './search-attributes';
