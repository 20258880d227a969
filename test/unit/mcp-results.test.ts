import { describe, expect, it } from 'vitest';
import { readMcpResult } from '../../src/activities/mcp-tool-call';
import { exposedToolName, mcpDescriptors, repeatable } from '../../src/activities/mcp-tool-listing';
import { mcpCallLimits } from '../../src/runtime';
import { AgentDefinition } from '../../src/runtime';

describe('MCP results as the model reads them', () => {
  it('joins text, shows resources and links readably, and leaves binary out', () => {
    const read = readMcpResult({
      content: [
        { type: 'text', text: 'first' },
        { type: 'resource_link', uri: 'file:///a.txt', name: 'a.txt', mimeType: 'text/plain', description: 'notes' },
        { type: 'resource', resource: { uri: 'mem://b', mimeType: 'text/plain', text: 'inside b' } },
        { type: 'resource', resource: { uri: 'mem://c', mimeType: 'application/zip', blob: 'AAAA' } },
        { type: 'audio', data: 'AAAAAAAA', mimeType: 'audio/wav' },
        { type: 'image', data: 'iVBO', mimeType: 'image/png' },
      ],
    });
    expect(read).toEqual({
      text: [
        'first',
        '[resource link: a.txt <file:///a.txt> (text/plain): notes]',
        '[resource <mem://b> (text/plain)]\ninside b',
        '[resource <mem://c> (application/zip): 3 bytes of binary data, not shown]',
        '[audio (audio/wav), 6 bytes, not shown]',
      ].join('\n'),
      images: ['data:image/png;base64,iVBO'],
      isError: false,
    });
  });

  it('gives structured content as JSON text, once when a text part is its serialized copy, and keeps isError', () => {
    // The copy the MCP spec asks servers to add for clients that read text only: any spacing, key order, number form.
    expect(
      readMcpResult({
        content: [{ type: 'text', text: '{\n  "b": 2.0,\n  "a": [1]\n}' }],
        structuredContent: { a: [1], b: 2 },
        isError: true,
      }),
    ).toEqual({ text: '{"a":[1],"b":2}', images: [], isError: true });
    // Text that says something else: both, the text first.
    expect(
      readMcpResult({
        content: [
          { type: 'text', text: 'Sunny in Paris.' },
          { type: 'text', text: '{"celsius": 21}' },
        ],
        structuredContent: { celsius: 21 },
      }),
    ).toEqual({ text: 'Sunny in Paris.\n{"celsius":21}', images: [], isError: false });
    expect(readMcpResult({ content: [{ type: 'text', text: 'Sunny.' }], structuredContent: { celsius: 21 } })).toEqual({
      text: 'Sunny.\n{"celsius":21}',
      images: [],
      isError: false,
    });
    expect(readMcpResult({ content: [], structuredContent: { celsius: 21 } }).text).toBe('{"celsius":21}');
  });
});

describe('MCP tool names and descriptors', () => {
  it('prefixes names and makes them provider-safe, at most 64 characters', () => {
    expect(exposedToolName({ tool_prefix: 'fs.' }, 'read file')).toBe('fs_read_file');
    expect(exposedToolName({ tool_prefix: '' }, 'x'.repeat(80))).toHaveLength(64);
  });

  it('keeps the allow-list, marks the server, and refuses an allowed tool the server lacks', () => {
    const server = AgentDefinition.parse({
      name: 'a',
      instructions: '',
      mcp_servers: [{ name: 'srv', command: 'x', tools: ['b'], tool_prefix: 'p_', timeout_seconds: 5 }],
    }).mcp_servers[0]!;
    const listing = [
      { name: 'a', inputSchema: { type: 'object' } },
      { name: 'b', description: 'B', inputSchema: { type: 'object', properties: { n: { type: 'number' } } } },
    ];
    expect(mcpDescriptors(server, listing, 60)).toEqual([
      {
        name: 'p_b',
        description: 'B',
        parameters: { type: 'object', properties: { n: { type: 'number' } } },
        best_practices: [],
        // Ten times the idle timeout (the longest a call may take in all) after the longest start of its
        // server (60 s by default: a call may have to start it), for the batch's timeout.
        timeout_seconds: 110,
        mcp: { server: 'srv', tool: 'b', repeatable: false, idle_seconds: 5, total_seconds: 50 },
      },
    ]);
    expect(() => mcpDescriptors({ ...server, tools: ['c'] }, listing, 60)).toThrow(
      /MCP server 'srv' has no tool\(s\) c/,
    );
  });

  it('marks a tool repeatable only when the server says it is read-only or idempotent', () => {
    expect(repeatable({})).toBe(false);
    expect(repeatable({ annotations: { readOnlyHint: false, idempotentHint: false } })).toBe(false);
    expect(repeatable({ annotations: { readOnlyHint: true } })).toBe(true);
    expect(repeatable({ annotations: { idempotentHint: true } })).toBe(true);
  });

  it('bounds a call by its idle timeout and by ten times that in all, or by max_call_seconds', () => {
    expect(mcpCallLimits({}, 60)).toEqual({ idleSeconds: 60, totalSeconds: 600 });
    expect(mcpCallLimits({ timeout_seconds: 5 }, 60)).toEqual({ idleSeconds: 5, totalSeconds: 50 });
    expect(mcpCallLimits({ timeout_seconds: 5, max_call_seconds: 7 }, 60)).toEqual({ idleSeconds: 5, totalSeconds: 7 });
    // A total below the idle timeout would never let the idle one matter: the idle one wins.
    expect(mcpCallLimits({ timeout_seconds: 30, max_call_seconds: 7 }, 60)).toEqual({
      idleSeconds: 30,
      totalSeconds: 30,
    });
  });
});
