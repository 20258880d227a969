import type { AgentRunResult, RunEvent } from '../runtime';
import type { RunHandle } from './patchloop-client';

/** One human-readable line per coarse event, or null for events not worth a line. */
export function describeEvent(event: RunEvent): string | null {
  switch (event.event_type) {
    case 'react_start':
      return `run started: agent ${event.agent}, tools ${event.available_tools.join(', ') || 'none'}`;
    case 'react_iteration_start':
      return `iteration ${event.iteration}`;
    case 'user_message_received':
      return `user message queued: ${preview(event.content)}`;
    case 'llm_call_start':
      return `  model call ${event.llm_call} (${event.message_count} messages${event.with_tools ? '' : ', no tools'})`;
    case 'llm_call_end': {
      const calls = event.tool_calls.map((call) => call.name).join(', ');
      const tokens = event.usage ? `, ${event.usage.total_tokens} tokens` : '';
      const what = event.outcome === 'aborted' ? `aborted after ${event.content.length} chars` : calls ? `asks for ${calls}` : `answered ${event.content.length} chars`;
      return `  model call ${event.llm_call} ${what} (${event.duration_ms} ms${tokens})`;
    }
    case 'tool_call_start':
      return `  -> ${event.tool_name} ${JSON.stringify(event.arguments)}`;
    case 'tool_call_end':
      return `  <- ${event.tool_name}: ${preview(JSON.stringify(event.result))} (${event.duration_ms} ms)`;
    case 'tool_call_error':
      return `  <- ${event.tool_name} failed: ${event.error}`;
    case 'tool_calls_batch_end':
      return event.cancelled.length > 0 ? `  cancelled: ${event.cancelled.join(', ')}` : null;
    case 'react_end':
      return `run ${event.status} after ${event.total_llm_calls} model call(s) and ${event.total_tool_calls} tool call(s)`;
    default:
      return null;
  }
}

function preview(text: string, limit = 120): string {
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

/** Polls the run's status (a query: nothing is written to history) and prints new events until the run ends. */
export async function followRun(run: RunHandle, print: (line: string) => void, intervalMs = 250): Promise<AgentRunResult> {
  const result = run.result();
  let settled = false;
  void result.then(
    () => (settled = true),
    () => (settled = true),
  );
  let seen = 0;
  for (;;) {
    try {
      const status = await run.status(seen);
      for (const event of status.events) {
        seen = event.seq;
        const line = describeEvent(event);
        if (line !== null) print(line);
      }
    } catch {
      // The run may not have a worker yet; keep polling until it ends.
    }
    if (settled) break;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return result;
}
