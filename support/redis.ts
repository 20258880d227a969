import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection } from 'node:net';
import { freePort } from '../src/worker/free-port';

export interface RedisServer {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/** Answers PING over a raw socket: true once the server accepts commands. */
function pings(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('error', () => resolve(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString().startsWith('+PONG'));
    });
  });
}

/**
 * A real `redis-server` (Debian's package; set-up installs it) on a free port, in memory only. A missing
 * binary fails the caller: the Redis tests never skip.
 */
export async function startRedis(options: { port?: number } = {}): Promise<RedisServer> {
  const port = options.port ?? (await freePort());
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const exited = new Promise<Error>((resolve) => {
    child.once('error', (error) => resolve(new Error(`redis-server did not start: ${error.message}`)));
    child.once('exit', (code) => resolve(new Error(`redis-server exited with ${code}`)));
  });
  const deadline = Date.now() + 15_000;
  for (;;) {
    const outcome = await Promise.race([pings(port), exited]);
    if (outcome instanceof Error) throw outcome;
    if (outcome) break;
    if (Date.now() > deadline) throw new Error('redis-server did not answer PING within 15 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: async () => {
      if (child.exitCode !== null) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await gone;
    },
  };
}
