import type { AgentRegistry } from '../agents/registry';
import type { SecretRedactor } from './redact';
import { deliverA2aPush } from './a2a-push-delivery';
import { awaitTaskChange } from './a2a-push-watch';
import { awaitAgentRun } from './await-agent-run';
import { createDescribeAgent } from './describe-agent';
import { McpServers } from './mcp-connections';
import { createRelistMcpTools } from './mcp-tool-listing';
import { createLlmPhase, type ChunkSink, type ProviderSettings } from './llm-phase';
import { createPrepareFunction } from './prepare-function';
import { RequestCache } from './request-source';
import { createInlineBatch, createToolBatch, type ToolBatchSettings } from './tool-batch';
import { CHECKPOINT_BYTES } from './tool-batch-progress';
import { createReviewToolCalls } from './tool-review';
import { createCheckGuardrails } from './guardrail-check';
import { chargeSchedule, createScheduleStanding } from './schedule-budget';
import { sendToSession } from './session-message';
import { createDeliverNotification, type NotifyLinks } from './notify-delivery';
import { createCaptureRunState, type ForkReplayCode } from './fork-capture';

export interface ActivitySettings {
  registry: AgentRegistry;
  provider: ProviderSettings;
  defaultModel: string;
  tools?: Partial<ToolBatchSettings>;
  /** The side channel for token chunks. */
  chunks?: ChunkSink;
  /** Removes the configured keys (and key-shaped values) from tool errors. */
  redactor?: SecretRedactor;
  /** The worker's data converter sends large payloads by reference (External Storage). */
  payloadsByReference?: boolean;
  /**
   * Its threshold: heartbeat checkpoints stay below it, so none is stored (each heartbeat would be), and
   * so do runs' results, so any client reads them.
   */
  payloadThresholdBytes?: number;
  /** Whether the namespace has patchloop's search attributes (runs then keep them current). */
  searchAttributes?: () => Promise<boolean>;
  /** PATCHLOOP_MODEL_WINDOWS, parsed. */
  modelWindows?: Readonly<Record<string, number>>;
  /**
   * What the failure of a run of an agent this worker does not serve adds about other workers on its
   * task queue (which serve the agent, and the fix); undefined when no other worker shares it.
   */
  sharedQueue?: (agent: string) => Promise<string | undefined>;
  /** The worker's MCP connections (created here when absent; the worker closes them when it stops). */
  mcp?: McpServers;
  /** The pages a run's end notification links to (its console page, its Temporal UI page), when known. */
  notifyLinks?: NotifyLinks;
  /** The worker's workflow code and data converter, for the replay a fork reads its point from. */
  forkReplay?: () => ForkReplayCode | undefined;
}

/** The activities a patchloop worker registers. Workflows import their type only. */
export function createActivities(settings: ActivitySettings) {
  // Shared: the next request is the last one plus what this worker's model call and tools returned.
  const requests = new RequestCache();
  const mcp = settings.mcp ?? new McpServers();
  const batchSettings: ToolBatchSettings = {
    abortGraceMs: 200,
    mcp,
    ...(settings.redactor ? { redactor: settings.redactor } : {}),
    // Inline payloads: the batch result keeps to the same budget as everything a workflow sends.
    ...(settings.payloadsByReference ? {} : { maxBatchBytes: 1_500_000 }),
    ...(settings.payloadThresholdBytes !== undefined
      ? { checkpointBytes: Math.floor(settings.payloadThresholdBytes * 0.75) }
      : {}),
    ...settings.tools,
  };
  // The reply's fast tools, run by the model call's activity (./fast-tools.ts): the same budget.
  const fastTools = {
    runBatch: createInlineBatch(settings.registry, batchSettings, requests),
    maxBytes: batchSettings.maxBatchBytes,
    heartbeatBytes: batchSettings.checkpointBytes ?? CHECKPOINT_BYTES,
    redactor: settings.redactor,
  };
  return {
    ...createDescribeAgent(
      settings.registry,
      settings.defaultModel,
      {
        payloadsByReference: settings.payloadsByReference ?? false,
        ...(settings.payloadThresholdBytes !== undefined
          ? { payloadThresholdBytes: settings.payloadThresholdBytes }
          : {}),
        searchAttributes: settings.searchAttributes ?? (async () => false),
        ...(settings.modelWindows ? { modelWindows: settings.modelWindows } : {}),
        ...(settings.sharedQueue ? { sharedQueue: settings.sharedQueue } : {}),
      },
      mcp,
    ),
    awaitAgentRun,
    scheduleStanding: createScheduleStanding(settings.registry, settings.searchAttributes ?? (async () => false)),
    chargeSchedule,
    sendToSession,
    relistMcpTools: createRelistMcpTools(settings.registry, mcp, settings.redactor),
    prepareFunction: createPrepareFunction(settings.registry, settings.defaultModel),
    llmPhase: createLlmPhase(settings.provider, requests, settings.registry, {
      chunks: settings.chunks,
      redactor: settings.redactor,
      fastTools,
    }),
    reviewToolCalls: createReviewToolCalls(settings.registry),
    checkGuardrails: createCheckGuardrails(settings.registry),
    deliverNotification: createDeliverNotification(settings.notifyLinks ?? (() => undefined)),
    awaitTaskChange,
    deliverA2aPush,
    toolBatch: createToolBatch(settings.registry, batchSettings, requests),
    ...createCaptureRunState(settings.forkReplay ?? (() => undefined)),
  };
}

export type Activities = ReturnType<typeof createActivities>;
export type { ProviderSettings } from './llm-phase';
export { McpServers } from './mcp-connections';
export { nudgeAfterAbort } from './abort-nudges';
