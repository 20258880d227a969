import { z } from 'zod';
import { Mutation, type JsonObject } from '../context';
import { AgentDefinition } from './agent';
import { ConfigurationError } from './configuration-error';
import { PROTOCOL_VERSION, RunEvent, StreamEvent } from './events';
import { AgentRunInput, AgentRunResult } from './run-input';
import { ScheduleDefinition } from './schedule';
import { ChatSessionInput, TurnReply } from './session';

/**
 * The JSON Schema zod produces for what a caller sends (a tool's arguments, a function's output),
 * without the `$schema` marker providers reject. A schema converts itself where its zod can: a tool
 * module may have its own copy of zod (its project's), which holds the descriptions its schemas were
 * given; a zod without the method gets this copy's conversion. zod 3 schemas have no zod 4 internals.
 */
export function providerJsonSchema(schema: z.ZodType): JsonObject {
  if (typeof schema !== 'object' || schema === null || !('_zod' in schema))
    throw new ConfigurationError(
      "a schema must be a zod 4 schema (zod 3 was given: install zod 4, or with zod 3.25 import { z } from 'zod/v4')",
    );
  const own = (schema as { toJSONSchema?: (params: { io: 'input' }) => unknown }).toJSONSchema;
  const converted =
    typeof own === 'function' ? own.call(schema, { io: 'input' }) : z.toJSONSchema(schema, { io: 'input' });
  const { $schema: _marker, ...jsonSchema } = converted as JsonObject;
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
    'schedule-definition.schema.json': schema(
      ScheduleDefinition,
      'input',
      'patchloop schedule (the schedules of an agents file)',
    ),
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
