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
