/** Fixed texts the runtime writes into transcripts (spec 3.4, 6.6); byte-exact by invariant 9. */

export function truncatedAssistantContent(partialContent: string, abortReason: string): string {
  return `${partialContent}<Truncated due to cancel from user.${abortReason !== '' ? ` Reason: ${abortReason}` : ''}>`;
}

export function toolCancelledContent(toolName: string, abortReason: string): string {
  return `<Tool execution cancelled by user. Tool: ${toolName}.${abortReason !== '' ? ` Reason: ${abortReason}` : ''}>`;
}

export function multimodalAssistantSentence(toolName: string, rawArguments: string): string {
  return `I will ask the user to provide the result from tool '${toolName}' with arguments: ${rawArguments}.`;
}

export function forkTaskContent(message: string): string {
  return (
    'You are now already a forked subagent. So you have no need to care about whether the previous fork was correct or not, ' +
    'because it has already succeeded. And now, the only thing you are required to do is:\n\n' +
    message +
    '\n\nFollow the instructions above to finish this task.'
  );
}
