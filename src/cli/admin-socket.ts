import { chmodSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { AppError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import type { CliOutput } from './command.ts';
import { EXIT } from './failures.ts';

/**
 * The admin socket: how CLI commands reach a `plainpay serve` that holds the embedded database.
 * PGlite opens in one process only, so while serve runs, `plainpay keys revoke …` cannot open it;
 * it sends its command line here instead, and serve runs the same command on its own open
 * database, through the Kysely dialect whose mutex serialises it with the service's own queries and
 * transactions. (Exposing PGlite itself on a socket would let a second client's statements land in
 * the middle of a transaction of the service.)
 *
 * A Unix domain socket beside the data dir (`<dataDir>.sock`, mode 0600: only its owner, who could
 * open the data dir anyway, may connect). Newline-delimited JSON, one command per connection:
 *
 *   CLI → serve   {"argv":["keys","revoke","--account","acct_…","--id","key_…"]}
 *   serve → CLI   {"stream":"stdout","line":"…"}  {"stream":"stderr","line":"…"}  …  {"exit":0}
 *
 * The argv is all that is sent: the command runs with serve's configuration and master key.
 */

/** A command line is a few short words; anything this long is not one. */
const MAX_REQUEST_CHARS = 64 * 1024;
/** sun_path holds 108 bytes on Linux, 104 on macOS (NUL included), and libuv cuts a longer path short silently. */
const MAX_SOCKET_PATH_BYTES = 103;
/** What connect() says when no one listens there: no socket file, or one a killed serve left behind. */
const NOBODY_LISTENING = new Set(['ENOENT', 'ECONNREFUSED', 'ENOTSOCK']);

const requestSchema = z.object({ argv: z.array(z.string().max(4096)).min(1).max(64) }).strict();
const replySchema = z.union([
  z.object({ stream: z.enum(['stdout', 'stderr']), line: z.string() }).strict(),
  z.object({ exit: z.number().int().min(0).max(255) }).strict(),
]);
type Reply = z.infer<typeof replySchema>;

/** Runs a forwarded command line with the output going back to the CLI; resolves with its exit code. */
export type CommandRunner = (argv: string[], out: CliOutput) => Promise<number>;

export interface AdminSocket {
  path: string;
  /** Stops taking commands, lets those running finish, then removes the socket. */
  close(): Promise<void>;
}

/** Where the admin socket of a data dir is, or undefined when that path is too long for a socket. */
export function adminSocketPath(dataDir: string): string | undefined {
  const path = `${resolve(dataDir)}.sock`;
  return Buffer.byteLength(path) <= MAX_SOCKET_PATH_BYTES ? path : undefined;
}

/**
 * Listens on the data dir's admin socket. Returns undefined (with a warning) when the path is too
 * long for a socket: the service runs, and CLI commands meet the data dir's lock as before.
 */
export async function startAdminSocket(
  dataDir: string,
  run: CommandRunner,
  logger: Logger,
): Promise<AdminSocket | undefined> {
  const path = adminSocketPath(dataDir);
  if (!path) {
    logger.warn(
      { dataDir: resolve(dataDir) },
      'the data dir path is too long for a Unix socket: CLI commands cannot reach this process while it runs',
    );
    return undefined;
  }
  const connections = new Set<Socket>();
  /** Connections whose command is running: a stop waits for them. */
  const busy = new Map<Socket, Promise<void>>();
  const server = createServer((socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
    acceptCommand(socket, (argv) => {
      const running = execute(socket, argv, run, logger).finally(() => busy.delete(socket));
      busy.set(socket, running);
    });
  });
  // Created owner-only (umask) rather than narrowed after: between listen and a chmod, anyone the
  // umask lets in could connect. The chmod stays for a umask that is already stricter elsewhere.
  const umask = process.umask(0o077);
  try {
    await listenReplacingStale(server, path);
  } finally {
    process.umask(umask);
  }
  chmodSync(path, 0o600);
  return {
    path,
    async close() {
      const closed = new Promise<void>((done) => server.close(() => done()));
      // A connection that has not sent its command yet has nothing to lose.
      for (const socket of connections) if (!busy.has(socket)) socket.destroy();
      await Promise.allSettled(busy.values());
      await closed;
    },
  };
}

/** Reads the one request line of a connection; answers exit 2 to anything that is not a valid request. */
function acceptCommand(socket: Socket, onCommand: (argv: string[]) => void): void {
  // A CLI that goes away mid-answer (Ctrl-C) must not take serve down; its command still runs to the end.
  socket.on('error', () => {});
  socket.setEncoding('utf8');
  let received = '';
  const onData = (chunk: string): void => {
    received += chunk;
    const end = received.indexOf('\n');
    if (end === -1 && received.length <= MAX_REQUEST_CHARS) return;
    socket.off('data', onData);
    const request = requestSchema.safeParse(parseJsonLine(received.slice(0, end === -1 ? undefined : end)));
    if (end === -1 || !request.success) {
      send(socket, { stream: 'stderr', line: 'Not a plainpay admin request: expected one line {"argv":[…]}.' });
      finish(socket, EXIT.usage);
      return;
    }
    onCommand(request.data.argv);
  };
  socket.on('data', onData);
}

async function execute(socket: Socket, argv: string[], run: CommandRunner, logger: Logger): Promise<void> {
  const out: CliOutput = {
    stdout: (line) => send(socket, { stream: 'stdout', line }),
    stderr: (line) => send(socket, { stream: 'stderr', line }),
  };
  // The runner reports failures itself; should it still throw, the CLI gets an answer and the
  // rejection does not go unhandled in the service's process.
  const exit = await run(argv, out).catch((error: unknown) => {
    logger.error({ err: error, argv }, 'admin command crashed');
    out.stderr(error instanceof Error ? error.message : String(error));
    return EXIT.failure;
  });
  // The command lines carry ids and names, never secrets (those come from the environment).
  logger.info({ argv, exit }, 'admin command');
  finish(socket, exit);
}

function send(socket: Socket, reply: Reply): void {
  if (!socket.destroyed) socket.write(`${JSON.stringify(reply)}\n`);
}

/** Sends the exit code and closes once it is flushed, so no CLI can hold a stopping serve open. */
function finish(socket: Socket, exit: number): void {
  send(socket, { exit });
  socket.end(() => socket.destroy());
}

/**
 * Listens on `path`. A socket file that is there already but that no one answers on was left by a
 * serve that was killed (we hold the data dir's lock, so none of ours is running): it is replaced.
 */
async function listenReplacingStale(server: Server, path: string): Promise<void> {
  try {
    await listen(server, path);
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
  }
  const other = await connectToSocket(path);
  if (other) {
    other.destroy();
    throw new AppError('unavailable', `Another process answers on ${path}; stop it or remove the socket file.`);
  }
  rmSync(path, { force: true });
  await listen(server, path);
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolveListen();
    });
  });
}

/** Connects to the admin socket of a data dir; undefined when no serve listens there. */
export async function connectToService(dataDir: string): Promise<Socket | undefined> {
  const path = adminSocketPath(dataDir);
  return path ? connectToSocket(path) : undefined;
}

function connectToSocket(path: string): Promise<Socket | undefined> {
  return new Promise((resolveConnect, reject) => {
    const socket = createConnection(path);
    const onError = (error: NodeJS.ErrnoException): void => {
      if (NOBODY_LISTENING.has(error.code ?? '')) resolveConnect(undefined);
      else reject(error);
    };
    socket.once('error', onError);
    socket.once('connect', () => {
      socket.off('error', onError);
      resolveConnect(socket);
    });
  });
}

/** Sends a command line to serve, writes what it prints, and resolves with its exit code. */
export function forwardCommand(socket: Socket, argv: string[], out: CliOutput): Promise<number> {
  return new Promise((resolveExit, reject) => {
    let exit: number | undefined;
    let failure: AppError | undefined;
    socket.on('error', (error) => {
      failure ??= new AppError('unavailable', `The running service stopped answering: ${error.message}`, {
        cause: error,
      });
    });
    createInterface({ input: socket, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) => {
      if (failure) return;
      const reply = replySchema.safeParse(parseJsonLine(line));
      if (!reply.success) {
        failure = new AppError('internal', 'The running service answered in a form this CLI does not understand.');
        socket.destroy();
      } else if ('exit' in reply.data) {
        exit = reply.data.exit;
      } else {
        out[reply.data.stream](reply.data.line);
      }
    });
    socket.once('close', () => {
      // Once the exit code is in, the command is over: how the connection then ends does not matter.
      if (exit !== undefined) resolveExit(exit);
      else
        reject(
          failure ??
            new AppError('unavailable', 'The running service closed the connection before the command finished.'),
        );
    });
    socket.write(`${JSON.stringify({ argv })}\n`);
  });
}

function parseJsonLine(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}
