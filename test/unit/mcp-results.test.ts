import { describe, expect, it } from 'vitest';
import { exposedToolName, mcpDescriptors, readMcpResult } from '../../src/activities/mcp-servers';
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

  it('gives structured content as JSON text, and keeps isError', () => {
    expect(
      readMcpResult({ content: [{ type: 'text', text: '{"t": 1}' }], structuredContent: { t: 1 }, isError: true }),
    ).toEqual({ text: '{"t":1}', images: [], isError: true });
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
    expect(mcpDescriptors(server, listing)).toEqual([
      {
        name: 'p_b',
        description: 'B',
        parameters: { type: 'object', properties: { n: { type: 'number' } } },
        best_practices: [],
        timeout_seconds: 5,
        mcp: { server: 'srv', tool: 'b' },
      },
    ]);
    expect(() => mcpDescriptors({ ...server, tools: ['c'] }, listing)).toThrow(/MCP server 'srv' has no tool\(s\) c/);
  });
});
