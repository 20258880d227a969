import type { ServerResponse } from 'node:http';
import type { FakeReply } from './steps';

/**
 * Writes a response body, counting bytes; with a reset point, writes up to it and then resets the TCP
 * connection (RST), as a network failure mid-body does.
 */
export class BodyWriter {
  broken = false;
  private bytes = 0;
  constructor(
    private readonly response: ServerResponse,
    private readonly resetAfterBytes: number | undefined,
  ) {}

  /** Writes this text, then resets the connection. */
  resetAfter(text: string): void {
    this.write(text);
    this.broken = true;
    const socket = this.response.socket;
    setTimeout(() => socket?.resetAndDestroy(), 20);
  }

  write(text: string): boolean {
    if (this.broken) return false;
    const data = Buffer.from(text, 'utf8');
    if (this.resetAfterBytes !== undefined && this.bytes + data.length > this.resetAfterBytes) {
      const keep = this.resetAfterBytes - this.bytes;
      const socket = this.response.socket;
      this.broken = true;
      if (keep > 0) this.response.write(data.subarray(0, keep));
      // Let the kept bytes leave before the reset, so the client really sees a partial body.
      setTimeout(() => socket?.resetAndDestroy(), 20);
      return false;
    }
    this.bytes += data.length;
    this.response.write(data);
    return true;
  }
}

export function startStream(response: ServerResponse): void {
  response.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  response.flushHeaders();
}

export function writeEvent(response: ServerResponse, data: unknown): void {
  response.write(`data: ${JSON.stringify(data)}\n\n`);
}

export function sendJson(
  response: ServerResponse,
  status: number,
  data: unknown,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(data));
}

export function pause(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

/**
 * Sends a stream's events as its step's fault breaks them: a junk data line after `afterChunks` events,
 * a reset half-way through event `afterChunks` (or after `afterBytes` bytes), and nothing once the
 * client left. `send` answers false when writing must stop; `onSent` counts each event written;
 * `raw` writes past the fault (a stream's closing line).
 */
export function faultingEventSender(
  response: ServerResponse,
  fault: FakeReply['fault'],
  closed: () => boolean,
  junkLine: string,
  onSent: () => void,
): { send: (event: string) => boolean; raw: (text: string) => boolean } {
  const out = new BodyWriter(response, fault?.kind === 'reset' ? fault.afterBytes : undefined);
  let written = 0;
  const send = (event: string): boolean => {
    if (closed() || out.broken) return false;
    if (fault?.kind === 'junk' && written === fault.afterChunks) out.write(`data: ${fault.line ?? junkLine}\n\n`);
    if (fault?.kind === 'reset' && written === fault.afterChunks) {
      out.resetAfter(event.slice(0, Math.floor(event.length / 2)));
      return false;
    }
    written += 1;
    onSent();
    return out.write(event);
  };
  return { send, raw: (text) => out.write(text) };
}
