import { defineTool } from 'patchloop';
import { z } from 'zod';

/** Made-up forecasts: a real tool would call a weather service, passing on `signal` to stop when asked. */
const FORECASTS: Record<string, string> = {
  paris: 'sunny, 24 °C',
  oslo: 'snow, -3 °C',
  lima: 'fog, 17 °C',
};

export const weather = defineTool({
  name: 'weather',
  description: "Today's weather forecast for a city.",
  parameters: z.object({ city: z.string().describe('The city, e.g. "Paris"') }),
  execute: ({ city }) => FORECASTS[city.trim().toLowerCase()] ?? `no forecast for ${city}`,
});

/** What `patchloop worker --tools tools.ts` serves, and what worker.ts registers. */
export const tools = [weather];
