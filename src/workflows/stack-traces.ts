/**
 * Preloaded before the workflows (`workflowBundleOptions`), unless the bundle is built with
 * `PATCHLOOP_WORKFLOW_STACK_TRACES=1`: no stack traces in workflow code. The SDK's workflow sandbox
 * records a stack trace, mapped through the bundle's source map, for every promise workflow code creates
 * (for the `__stack_trace` query); the loop creates hundreds per iteration, and those traces took about
 * half of the workflow thread's time (`npm run bench:profile`, bench/HISTORY.md). Without frames the
 * SDK's record is empty and cheap. What is lost: the frames of a workflow code error (its message stays)
 * and the Temporal UI's call stack of a running run. Activities and tools keep their stack traces.
 */
Error.stackTraceLimit = 0;

export {};
