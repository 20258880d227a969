import { modelScript } from 'patchloop/testing';

/**
 * What the model does in the offline test and in `npm run worker:offline`: it asks the weather tool
 * about Paris, then answers once the tool's result is in the request. Each step checks the request it
 * answers; a request that does not fit fails the run with a message naming the step.
 */
export const script = modelScript(
  [
    {
      name: 'asks the weather tool',
      expect: { user: { contains: 'Paris' }, tools: ['weather'] },
      callTools: [{ name: 'weather', arguments: { city: 'Paris' } }],
    },
    {
      name: 'answers from the forecast',
      expect: { toolResults: [{ name: 'weather', content: { contains: 'sunny' } }] },
      answer: 'It is sunny in Paris today, 24 °C.',
    },
  ],
  { name: 'paris-forecast' },
);

/**
 * A city the tool has no forecast for: the model says so instead of making one up. Its own test plays
 * it (`model.use(noForecast)`); `--fake-model weather.script.ts` plays `script` only.
 */
export const noForecast = modelScript(
  [
    {
      name: 'asks the weather tool',
      expect: { user: { contains: 'Reykjavik' }, tools: ['weather'] },
      callTools: [{ name: 'weather', arguments: { city: 'Reykjavik' } }],
    },
    {
      name: 'says there is none',
      expect: { toolResults: [{ name: 'weather', content: { contains: 'no forecast' } }] },
      answer: 'I have no forecast for Reykjavik today.',
    },
  ],
  { name: 'no-forecast' },
);
