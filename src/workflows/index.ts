/** The workflows a patchloop worker bundles and registers. */
export { agentRun } from './agent-run';
export { chatSession } from './chat-session';
export { llmFunction } from './llm-function';
export { scheduledFire } from './scheduled-fire';
export { notifyRunEnd } from './notify-run-end';
export { a2aPushWatcher } from './a2a-push-watcher';
