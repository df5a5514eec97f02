import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { noSchemaCompilers } from './schema-compilers.ts';

describe('noSchemaCompilers', () => {
  it('serves routes without a fastify schema', async () => {
    const app = Fastify({ schemaController: noSchemaCompilers });
    app.post('/echo', async (request) => request.body);
    try {
      const answered = await app.inject({ method: 'POST', url: '/echo', payload: { amount: 5 } });
      expect(answered.statusCode).toBe(200);
      expect(answered.json()).toEqual({ amount: 5 });
    } finally {
      await app.close();
    }
  });

  // Inputs are checked by zod alone: a route validated a second way would not start.
  it.each([
    ['a body schema', { body: { type: 'object', properties: { amount: { type: 'integer' } } } }],
    ['a response schema', { response: { 200: { type: 'object', properties: { amount: { type: 'integer' } } } } }],
  ])('refuses to start an app with %s, naming the rule', async (_kind, schema) => {
    const app = Fastify({ schemaController: noSchemaCompilers });
    app.post('/echo', { schema }, async (request) => request.body);
    try {
      await expect(app.ready()).rejects.toThrow(/inputs are checked by zod/);
    } finally {
      await app.close().catch(() => {});
    }
  });
});
