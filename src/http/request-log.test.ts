import { Writable } from 'node:stream';
import Fastify, { LogController } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { createLogger } from '../core/logger.ts';
import { randomRequestId, requestLoggerFactory } from './request-log.ts';

/** A host like ours (pino at `warn`, the lazy request logger) and the lines it writes. */
async function host() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger(
    'warn',
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  );
  const child = vi.spyOn(logger, 'child');
  const app = Fastify({
    logger: false,
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: requestLoggerFactory(logger),
    genReqId: () => 'req_test',
  });
  app.get('/quiet', async (request) => {
    request.log.info('not written at warn');
    request.log.debug({ secret: 'x' }, 'nor this');
    return { level: request.log.level };
  });
  app.get('/loud', async (request) => {
    request.log.warn({ api_key: 'sk_test_0123456789' }, 'written');
    return {};
  });
  app.get('/chatty', { logLevel: 'debug' }, async (request) => {
    request.log.debug('a route at debug writes debug');
    return {};
  });
  app.get('/terse', { logLevel: 'error' }, async (request) => {
    request.log.warn('a route at error does not write warn');
    return {};
  });
  app.get('/twice', (_request, reply) => {
    reply.send({});
    reply.send({});
  });
  await app.ready();
  child.mockClear();
  return { app, lines, child };
}

describe('the request logger', () => {
  it('is made only when a line at an enabled level is written', async () => {
    const { app, lines, child } = await host();
    const quiet = await app.inject({ url: '/quiet' });
    expect(quiet.json()).toEqual({ level: 'warn' });
    expect(lines).toEqual([]);
    expect(child).not.toHaveBeenCalled();

    await app.inject({ url: '/loud' });
    expect(child).toHaveBeenCalledTimes(1);
    // The line carries the request id, and redaction still applies.
    expect(lines).toEqual([expect.objectContaining({ reqId: 'req_test', msg: 'written', api_key: '[REDACTED]' })]);
    await app.close();
  });

  it("carries fastify's own lines about a request, with the request id", async () => {
    const { app, lines } = await host();
    expect((await app.inject({ url: '/twice' })).statusCode).toBe(200);
    expect(lines).toEqual([
      expect.objectContaining({
        reqId: 'req_test',
        level: 40,
        err: expect.objectContaining({ code: 'FST_ERR_REP_ALREADY_SENT' }),
      }),
    ]);
    await app.close();
  });

  it("follows a route's own log level", async () => {
    const { app, lines } = await host();
    await app.inject({ url: '/terse' });
    await app.inject({ url: '/chatty' });
    expect(lines).toEqual([expect.objectContaining({ reqId: 'req_test', msg: 'a route at debug writes debug' })]);
    await app.close();
  });
});

describe('request ids', () => {
  it('are req_ and 24 hex characters, none repeated, across more than one pool of 512', () => {
    const ids = Array.from({ length: 1_300 }, () => randomRequestId());
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{24}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
