export * from './agent';
export * from './digest';
export * from './events';
export * from './phases';
export * from './run-input';
export * from './agent-prompt';
export * from './selfref-tools';
export * from './session';
