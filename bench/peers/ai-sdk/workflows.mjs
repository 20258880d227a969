// The scenario on @temporalio/ai-sdk: generateText in the workflow, the model through the plugin's
// activity, the tool as an activity returning 4 KB, up to `iterations` tool steps and a final answer.
import { generateText, isStepCount, tool } from 'ai';
import { z } from 'zod';
import { proxyActivities } from '@temporalio/workflow';
import { temporalProvider } from '@temporalio/ai-sdk/workflow';

const { repeat } = proxyActivities({ startToCloseTimeout: '1 minute' });

export async function aiSdkAgent(iterations) {
  const result = await generateText({
    model: temporalProvider.languageModel('fake-model'),
    prompt: 'repeat',
    instructions: 'Call repeat until done.',
    tools: {
      repeat: tool({
        description: 'Repeat a text',
        inputSchema: z.object({ text: z.string(), times: z.number() }),
        execute: async (input) => repeat(input),
      }),
    },
    stopWhen: isStepCount(iterations + 1),
  });
  return result.text;
}
