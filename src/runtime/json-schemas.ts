import { z } from 'zod';
import { Mutation, type JsonObject } from '../context';
import { AgentDefinition } from './agent';
import { PROTOCOL_VERSION, RunEvent, StreamEvent } from './events';
import { AgentRunInput, AgentRunResult } from './run-input';
import { ChatSessionInput, TurnReply } from './session';

/**
 * The JSON Schema zod produces for what a caller sends (a tool's arguments, a function's output),
 * without the `$schema` marker providers reject.
 */
export function providerJsonSchema(schema: z.ZodType): JsonObject {
  const { $schema: _marker, ...jsonSchema } = z.toJSONSchema(schema, { io: 'input' }) as JsonObject;
  return jsonSchema;
}

/** The wire contracts other services use, as JSON Schema files under schemas/ (kept in sync by a test). */
export function publishedSchemas(): Record<string, unknown> {
  const schema = (type: z.ZodType, io: 'input' | 'output', title: string) => ({
    title,
    ...z.toJSONSchema(type, { io }),
  });
  return {
    'agent-run-input.schema.json': schema(AgentRunInput, 'input', 'patchloop agentRun input'),
    'agent-run-result.schema.json': schema(AgentRunResult, 'output', 'patchloop agentRun result'),
    'agent-definition.schema.json': schema(AgentDefinition, 'input', 'patchloop agent definition'),
    'mutation.schema.json': schema(Mutation, 'input', 'patchloop mutation (runtime patch)'),
    'chat-session-input.schema.json': schema(ChatSessionInput, 'input', 'patchloop chatSession input'),
    'turn-reply.schema.json': schema(TurnReply, 'output', 'patchloop chatSession send reply'),
    'run-event.schema.json': schema(RunEvent, 'output', `patchloop run event (event protocol ${PROTOCOL_VERSION})`),
    'stream-event.schema.json': schema(
      StreamEvent,
      'output',
      `patchloop token stream event (event protocol ${PROTOCOL_VERSION})`,
    ),
  };
}
