import { configFromEnvironment, followRun, PatchloopClient, RunFailedError, textOutput } from 'patchloop';

/**
 * `npm run ask -- What is the weather in Oslo?`: starts a run of the forecaster, prints its events and
 * tokens as they come, then its answer. Ctrl-C aborts the run (its transcript stays valid).
 */
const question = process.argv.slice(2).join(' ') || 'What is the weather in Paris?';
const client = await PatchloopClient.connect(configFromEnvironment());
try {
  const run = await client.start({ agent: 'forecaster', input: question });
  console.log(`run ${run.workflowId}`);
  const abort = () => void run.abort('stopped from the client');
  process.once('SIGINT', abort);
  const result = await followRun(
    run,
    textOutput((text) => process.stdout.write(text)),
  );
  process.off('SIGINT', abort);
  console.log(
    result.status === 'completed' ? `answer: ${result.answer}` : `${result.status}: ${result.abort_reason ?? ''}`,
  );
} catch (error) {
  // A failed run says why (its failure type, and the message of what failed): no stack for the user.
  if (!(error instanceof RunFailedError)) throw error;
  console.error(`failed (${error.type}): ${error.causeMessage}`);
  process.exitCode = 1;
} finally {
  await client.close();
}
