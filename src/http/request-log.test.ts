import { Writable } from 'node:stream';
import Fastify, { type FastifyBaseLogger, LogController } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { createLogger } from '../core/logger.ts';
import { lazyRequestLogger } from './request-log.ts';

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
    loggerInstance: logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyRequestLogger,
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

  it("follows a route's own log level", async () => {
    const { app, lines } = await host();
    await app.inject({ url: '/terse' });
    await app.inject({ url: '/chatty' });
    expect(lines).toEqual([expect.objectContaining({ reqId: 'req_test', msg: 'a route at debug writes debug' })]);
    await app.close();
  });
});
