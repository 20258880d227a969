export { agentRun } from './agent-run';
export * from './definitions';
