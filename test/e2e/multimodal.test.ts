import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { it } from '../support/fixtures';
import { z } from 'zod';
import { validateToolLinkage } from '../../src/context';
import { callTools, reply } from '../../src/fake-model/steps';
import { defineTool } from '../../src/tools/define-tool';
import { addTool } from '../../src/tools/examples';
import { describedImages, imageFile, imageUrl } from '../../src/tools/images';

// A 1x1 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
const folder = mkdtempSync(join(tmpdir(), 'patchloop-images-'));
const pngPath = join(folder, 'dot.png');
writeFileSync(pngPath, PNG);
const bigPath = join(folder, 'big.png');
writeFileSync(bigPath, Buffer.alloc(300_000, 1));

const plot = defineTool({
  name: 'plot',
  description: 'Plots a chart.',
  parameters: z.object({ kind: z.enum(['url', 'file', 'described', 'list', 'big']) }),
  execute: ({ kind }) => {
    if (kind === 'url') return imageUrl('https://example.com/chart.png', 'low');
    if (kind === 'file') return imageFile(pngPath);
    if (kind === 'described') return describedImages('a tiny dot', imageFile(pngPath));
    if (kind === 'list')
      return [imageUrl('https://example.com/a.png'), imageUrl(`data:image/png;base64,${PNG.toString('base64')}`)];
    return imageFile(bigPath);
  },
});

const agents = [
  { name: 'painter', instructions: 'You plot.', tools: ['plot', 'add'], limits: { max_image_bytes: 100_000 } },
];

describe('multimodal tool results', () => {
  it('turn images into an assistant sentence plus a user message with image parts, after the plain results', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents,
      tools: [plot, addTool],
      fake: {
        script: [
          callTools([
            { id: 'p_file', name: 'plot', arguments: '{"kind": "file"}' },
            { id: 'a1', name: 'add', arguments: '{"a": 1, "b": 2}' },
            { id: 'p_list', name: 'plot', arguments: '{"kind": "list"}' },
          ]),
          reply('I see the charts'),
        ],
      },
    });
    const run = await world.client.start({ agent: 'painter', input: 'plot it' });
    const result = await run.result();
    const dataUrl = `data:image/png;base64,${PNG.toString('base64')}`;
    expect(world.fake.requests[1]!.body.messages.slice(2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'a1', type: 'function', function: { name: 'add', arguments: '{"a": 1, "b": 2}' } }],
      },
      { role: 'tool', tool_call_id: 'a1', content: '3' },
      {
        role: 'assistant',
        content: 'I will ask the user to provide the result from tool \'plot\' with arguments: {"kind": "file"}.',
      },
      {
        role: 'user',
        content: [
          { type: 'text', text: "This is an image file returned by tool 'plot':" },
          { type: 'image_url', image_url: { url: dataUrl, detail: 'auto' } },
        ],
      },
      {
        role: 'assistant',
        content: 'I will ask the user to provide the result from tool \'plot\' with arguments: {"kind": "list"}.',
      },
      {
        role: 'user',
        content: [
          { type: 'text', text: "This is images returned by tool 'plot':" },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'auto' } },
          { type: 'image_url', image_url: { url: dataUrl, detail: 'auto' } },
        ],
      },
    ]);
    validateToolLinkage(result.transcript);
    world.fake.assertDone();
  });

  it('uses the spec captions for a URL and for a description with an image', async ({ startWorld }) => {
    const world = await startWorld({
      agents,
      tools: [plot, addTool],
      fake: {
        script: [
          callTools([{ id: 'p1', name: 'plot', arguments: '{"kind": "url"}' }]),
          callTools([{ id: 'p2', name: 'plot', arguments: '{"kind": "described"}' }]),
          reply('ok'),
        ],
      },
    });
    await (await world.client.start({ agent: 'painter', input: 'plot twice' })).result();
    const second = world.fake.requests[1]!.body.messages;
    expect(second.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: "This is an image returned by tool 'plot':" },
        { type: 'image_url', image_url: { url: 'https://example.com/chart.png', detail: 'low' } },
      ],
    });
    const third = world.fake.requests[2]!.body.messages;
    expect((third.at(-1)!['content'] as Array<{ text?: string }>)[0]!.text).toBe(
      "This is an image file and description returned by tool 'plot': a tiny dot",
    );
    world.fake.assertDone();
  });

  it('fails an oversized image with a clear error result instead of breaking the payload limit', async ({
    startWorld,
  }) => {
    const world = await startWorld({
      agents,
      tools: [plot, addTool],
      fake: { script: [callTools([{ id: 'p1', name: 'plot', arguments: '{"kind": "big"}' }]), reply('too big then')] },
    });
    const result = await (await world.client.start({ agent: 'painter', input: 'plot big' })).result();
    expect(result.status).toBe('completed');
    const error = JSON.parse(result.transcript.find((m) => m['tool_call_id'] === 'p1')!['content'] as string)
      .error as string;
    expect(error).toBe(
      `Tool 'plot' failed during execution or result parsing with arguments {"kind": "big"}: image is too large: 300000 bytes (limit 100000)`,
    );
    world.fake.assertDone();
  });
});
