// toAppError is the one place a thrown error becomes what HTTP, MCP and the agent answer. A
// database that cannot be reached is the dependency's fault and temporary: 503 `unavailable` with
// Retry-After, never a 500. The errors below are the ones pg really throws, made against servers
// that refuse, hang up or never answer; the SQLSTATE cases have the shape of pg's DatabaseError.

import { createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { AppError, isConnectionFailure, toAppError } from './errors.ts';

const servers: Server[] = [];
const sockets = new Set<Socket>();
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  for (const server of servers) {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

/** A TCP server that does `onConnection` with each socket; resolves to its port. */
async function tcpServer(onConnection: (socket: Socket) => void): Promise<number> {
  const server = createServer((socket) => {
    sockets.add(socket);
    onConnection(socket);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

/** A port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function thrownBy(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  throw new Error('expected the work to throw');
}

async function poolQueryError(url: string, options: pg.PoolConfig = {}): Promise<unknown> {
  const pool = new pg.Pool({ connectionString: url, ...options });
  pool.on('error', () => {});
  try {
    return await thrownBy(() => pool.query('select 1'));
  } finally {
    await pool.end().catch(() => {});
  }
}

function expectUnavailable(error: unknown): void {
  expect(isConnectionFailure(error)).toBe(true);
  const mapped = toAppError(error);
  expect(mapped.status).toBe(503);
  expect(mapped.toBody().error).toMatchObject({ type: 'api_error', code: 'unavailable' });
  expect(mapped.toBody().error.message).toMatch(/temporarily unavailable/);
  expect(mapped.headers['Retry-After']).toMatch(/^\d+$/);
  // The cause is kept for the log, and its text (host, port) is not sent.
  expect(mapped.cause).toBe(error);
  expect(mapped.message).not.toMatch(/127\.0\.0\.1|ECONN/);
}

describe('toAppError: the database cannot be reached → 503 unavailable with Retry-After', () => {
  it('nothing listens on the port (ECONNREFUSED from a pool connect)', async () => {
    const error = await poolQueryError(`postgres://postgres@127.0.0.1:${await closedPort()}/x`);
    expect((error as { code?: string }).code).toBe('ECONNREFUSED');
    expectUnavailable(error);
  });

  it('the server hangs up on the connection ("Connection terminated unexpectedly")', async () => {
    const port = await tcpServer((socket) => socket.once('data', () => socket.destroy()));
    const error = await poolQueryError(`postgres://postgres@127.0.0.1:${port}/x`);
    expect((error as Error).message).toMatch(/Connection terminated/);
    expectUnavailable(error);
  });

  it('the server never answers: the pool connect times out', async () => {
    const port = await tcpServer(() => {});
    const error = await poolQueryError(`postgres://postgres@127.0.0.1:${port}/x`, { connectionTimeoutMillis: 200 });
    expect((error as Error).message).toMatch(/timeout/);
    expectUnavailable(error);
  });

  it('every pooled client stays busy past the connect timeout', async () => {
    // One client of one connects for ever (no timeout for it); the next caller waits in the queue.
    const port = await tcpServer(() => {});
    const pool = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${port}/x`, max: 1 });
    pool.on('error', () => {});
    void pool.connect().catch(() => undefined);
    pool.options.connectionTimeoutMillis = 100;
    const error = await thrownBy(() => pool.connect());
    expect((error as Error).message).toBe('timeout exceeded when trying to connect');
    expectUnavailable(error);
  });

  it.each([
    ['57P01', 'terminating connection due to administrator command'],
    ['57P02', 'terminating connection due to crash of another server process'],
    ['57P03', 'the database system is starting up'],
    ['08006', 'connection failure'],
    ['08001', 'could not establish connection'],
    ['53300', 'sorry, too many clients already'],
  ])('SQLSTATE %s (%s)', (code, message) => {
    expectUnavailable(Object.assign(new Error(message), { code, severity: 'FATAL' }));
  });

  it('in an AggregateError (both addresses of a host refused) or as a cause', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' });
    expectUnavailable(new AggregateError([refused, refused]));
    expectUnavailable(new Error('query failed', { cause: refused }));
  });
});

describe('toAppError: other errors keep their mapping', () => {
  it.each([
    ['a unique violation (23505)', Object.assign(new Error('duplicate key'), { code: '23505' }), 500],
    ['a syntax error (42601)', Object.assign(new Error('syntax error'), { code: '42601' }), 500],
    ['a statement timeout (57014)', Object.assign(new Error('canceling statement'), { code: '57014' }), 500],
    ['a protocol violation (08P01, a bug)', Object.assign(new Error('bind message'), { code: '08P01' }), 500],
    ['a client used after release (a bug)', new Error('Client was closed and is not queryable'), 500],
    ['a plain Error', new Error('boom'), 500],
    ['a NUL in text (22021)', Object.assign(new Error('invalid byte'), { code: '22021' }), 400],
    ['a thrown string', 'ECONNREFUSED', 500],
  ])('%s', (_name, error, status) => {
    expect(isConnectionFailure(error)).toBe(false);
    expect(toAppError(error).status).toBe(status);
    expect(toAppError(error).headers['Retry-After']).toBeUndefined();
  });

  it('an AppError passes through unchanged', () => {
    const error = new AppError('not_found', 'No such payment.');
    expect(toAppError(error)).toBe(error);
  });
});
