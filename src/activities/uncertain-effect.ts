/**
 * What the model is told about a call that gave no result but may still have taken effect, whichever
 * way that came about: a crash that interrupted it (the retry does not send it again), a timeout or an
 * abort it outlived, or its MCP server lost while it ran. One wording for all of them, so the model
 * always reads the same advice; used only for calls not known to be repeatable (a registered tool
 * without `idempotent`, an MCP tool its server marks neither `readOnlyHint` nor `idempotentHint`).
 */
export function uncertainEffect(what: string): string {
  return `${what}: it may or may not have taken effect. Check before calling it again.`;
}

/** Why a call may not simply be made again: what its tool does not say of itself. */
export function notRepeatable(kind: 'mcp' | 'registered'): string {
  return kind === 'mcp'
    ? 'the server does not mark the tool readOnlyHint or idempotentHint'
    : 'the tool is not marked idempotent';
}

/**
 * The note of a call an abort left running, not known to be repeatable (a registered tool's, or an MCP
 * server's tool's): its cancellation marker and its `tool_call_error` event carry it.
 */
export function abortedCallNote(toolName: string, mcpServer?: string): string {
  return uncertainEffect(
    mcpServer === undefined
      ? `Tool '${toolName}' was still running when the run was aborted (it did not stop when told to), and ${notRepeatable('registered')}`
      : `Tool '${toolName}' (MCP server '${mcpServer}') was still running when the run was aborted (the server was told to cancel it), and ${notRepeatable('mcp')}`,
  );
}
