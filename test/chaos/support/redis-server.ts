// A private redis-server for a chaos test, on a port of its own, run as a child process, so that
// stopping it disturbs nothing else on the machine (the shared Redis on 6379 is never touched). No
// persistence: a restart starts empty, as a cache node that was replaced would. When the binary is
// missing, redisServerBinary() is undefined and the test skips.

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { freePort } from './free-port.ts';

export function redisServerBinary(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

export interface RedisServer {
  port: number;
  url: string;
  /** Starts it (again, on the same port) and waits until it accepts connections. */
  start(): Promise<void>;
  /** Stops it (SIGTERM) and waits for the process to exit. */
  stop(): Promise<void>;
  /**
   * Freezes it (SIGSTOP): its connections stay open and take commands, and nothing answers, as a
   * Redis stalled by a long fork, swap or a paused VM.
   */
  freeze(): void;
  /** Lets a frozen server run again (SIGCONT): it answers what it was sent meanwhile. */
  thaw(): void;
  running(): boolean;
  /** Stops it if running; nothing is left behind (no persistence). */
  destroy(): Promise<void>;
}

export async function createRedisServer(): Promise<RedisServer> {
  const binary = redisServerBinary();
  if (!binary) throw new Error('redis-server is not installed');
  const port = await freePort();
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const onExit = (): void => {
    child?.kill('SIGKILL');
  };
  process.on('exit', onExit);

  const server: RedisServer = {
    port,
    url: `redis://127.0.0.1:${port}`,
    running: () => child !== undefined,
    async start() {
      if (child) return;
      const started = spawn(
        binary,
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', '/tmp'],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      child = started;
      const output: string[] = [];
      exited = new Promise<void>((resolve) => started.once('exit', () => resolve()));
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${output.join('\n')}`)), 30_000);
        createInterface({ input: started.stdout! }).on('line', (line) => {
          output.push(line);
          if (line.includes('Ready to accept connections')) {
            clearTimeout(timer);
            resolve();
          }
        });
        void exited.then(() => {
          clearTimeout(timer);
          reject(new Error(`redis-server exited at start:\n${output.join('\n')}`));
        });
      });
    },
    freeze() {
      child?.kill('SIGSTOP');
    },
    thaw() {
      child?.kill('SIGCONT');
    },
    async stop() {
      if (!child) return;
      // A frozen server would take the SIGTERM only once it runs again.
      child.kill('SIGCONT');
      child.kill('SIGTERM');
      await exited;
      child = undefined;
    },
    async destroy() {
      await server.stop();
      process.off('exit', onExit);
    },
  };
  return server;
}
