import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { AccessRefused, checkAction, checkRead, sessionValue, type ConsoleAccess } from '../../src/console/access';
import { isLoopbackHost } from '../../src/config/loopback';
import { transcript } from '../../src/console/pages';
import { summaryMessage } from '../../src/runtime';

const toolCall = (id: string, name: string, args: string) => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});

describe("the console's transcript", () => {
  it('folds each tool call with its arguments and result side by side, and marks summaries, cleared results and aborts', () => {
    const html = transcript([
      { role: 'system', content: 'You help.' },
      { role: 'user', content: 'add 2 and 3' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [toolCall('c1', 'add', '{"a":2,"b":3}'), toolCall('c2', 'read', '{}')],
      },
      { role: 'tool', tool_call_id: 'c1', content: '5' },
      { role: 'tool', tool_call_id: 'c2', content: '[tool result cleared to save context: 4,096 characters]' },
      summaryMessage('<context_compaction_summary>\nthe user added numbers\n</context_compaction_summary>'),
      { role: 'assistant', content: 'The sum is<Truncated due to cancel from user. Reason: stop>' },
    ]);
    expect(html).toMatch(
      /<details class="tool-call" data-tool-call-id="c1">[\s\S]*Arguments[\s\S]*&quot;a&quot;: 2[\s\S]*Result[\s\S]*5/,
    );
    expect(html).toContain('result cleared to save context');
    expect(html).toContain('summary of earlier messages');
    expect(html).toContain('cut short by an abort');
    // Answered tool messages are shown under their call, not again on their own.
    expect(html.match(/role-tool/g)).toBeNull();
  });

  it('shows images of web and data URLs, and nothing of another scheme', () => {
    const html = transcript([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'the chart:' },
          { type: 'image_url', image_url: { url: 'https://example.com/chart.png' } },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'image_url', image_url: { url: 'javascript:alert(1)' } },
        ],
      },
    ]);
    expect(html).toContain('<img src="https://example.com/chart.png"');
    expect(html).toContain('<img src="data:image/png;base64,iVBORw0KGgo="');
    expect(html).not.toContain('<img src="javascript:');
  });

  it('escapes whatever a run holds', () => {
    const html = transcript([
      { role: 'user', content: '<script>alert("x")</script>' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [toolCall('"><img src=x onerror=alert(1)>', 'a<b', '{"x":"</pre><script>"}')],
      },
    ]);
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<img src=x');
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
  });
});

describe("the console's access rules", () => {
  const access: ConsoleAccess = { token: 'a-token-of-sixteen-chars', loopbackBind: true };
  const request = (headers: Record<string, string>, method = 'GET', remote = '127.0.0.1') =>
    ({ headers, method, socket: { remoteAddress: remote } }) as unknown as IncomingMessage;
  const refusal = (check: () => void) => {
    try {
      check();
      return 'allowed';
    } catch (error) {
      if (error instanceof AccessRefused) return error.status;
      throw error;
    }
  };

  it('knows loopback names', () => {
    for (const host of ['localhost', 'localhost:8300', '127.0.0.1:8300', '127.1.2.3', '[::1]:8300'])
      expect(isLoopbackHost(host)).toBe(true);
    for (const host of ['example.com', 'localhost.example.com:8300', '192.0.2.1:8300', '[::2]', ''])
      expect(isLoopbackHost(host)).toBe(false);
  });

  it('lets this machine read under a loopback name, nothing else without the token', () => {
    expect(refusal(() => checkRead(request({ host: '127.0.0.1:8300' }), access))).toBe('allowed');
    expect(refusal(() => checkRead(request({ host: 'evil.example:8300' }), access))).toBe(421);
    expect(refusal(() => checkRead(request({ host: '127.0.0.1:8300' }, 'GET', '192.0.2.7'), access))).toBe(401);
    const open = { ...access, loopbackBind: false };
    expect(refusal(() => checkRead(request({ host: '192.0.2.1:8300' }), open))).toBe(401);
    expect(
      refusal(() => checkRead(request({ host: '192.0.2.1:8300', authorization: `Bearer ${access.token}` }), open)),
    ).toBe('allowed');
  });

  it('lets an action through only as a same-origin JSON POST with the token', () => {
    const host = '127.0.0.1:8300';
    const cookie = `patchloop_console=${sessionValue(access.token)}`;
    const json = { host, 'content-type': 'application/json' };
    const action = (headers: Record<string, string>, method = 'POST') =>
      refusal(() => checkAction(request(headers, method), access));
    expect(action({ ...json })).toBe(401);
    expect(action({ ...json, authorization: `Bearer ${access.token}` })).toBe('allowed');
    expect(action({ ...json, authorization: `Bearer ${access.token}` }, 'GET')).toBe(405);
    expect(action({ host, 'content-type': 'text/plain', authorization: `Bearer ${access.token}` })).toBe(415);
    expect(action({ ...json, cookie, origin: `http://${host}` })).toBe('allowed');
    expect(action({ ...json, cookie, origin: 'http://127.0.0.1:9999' })).toBe(403);
    expect(action({ ...json, cookie })).toBe(403);
    expect(action({ ...json, cookie, origin: `http://${host}`, 'sec-fetch-site': 'same-site' })).toBe(403);
    expect(action({ ...json, cookie: `patchloop_console=${access.token}`, origin: `http://${host}` })).toBe(401);
  });
});
