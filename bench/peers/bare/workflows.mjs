// The floor: a bare Temporal loop, two no-op activities per iteration (a "model call" and a tool
// returning 4 KB), with the SDK's own defaults. Not an agent: what any agent on Temporal pays at least.
import { proxyActivities } from '@temporalio/workflow';

const { model, tool } = proxyActivities({ startToCloseTimeout: '1 minute' });

export async function bareLoop(iterations) {
  for (let index = 0; index < iterations; index += 1) {
    await model(index);
    await tool(index);
  }
  return model(iterations);
}
