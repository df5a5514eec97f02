import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { lazySchemaCompilers } from './schema-compilers.ts';

// No route of ours declares a fastify schema; should one ever, it must be validated and serialized
// exactly as with fastify's own compilers, which the lazy factories load at that route.
describe('lazySchemaCompilers', () => {
  it('validates a body and serializes a response by their fastify schemas', async () => {
    const app = Fastify({ schemaController: lazySchemaCompilers });
    app.post(
      '/echo',
      {
        schema: {
          body: { type: 'object', required: ['amount'], properties: { amount: { type: 'integer', minimum: 1 } } },
          response: { 200: { type: 'object', properties: { amount: { type: 'integer' } } } },
        },
      },
      async (request) => ({ ...(request.body as object), secret: 'not in the response schema' }),
    );
    try {
      const refused = await app.inject({ method: 'POST', url: '/echo', payload: { amount: 0 } });
      expect(refused.statusCode).toBe(400);
      expect(refused.json().message).toMatch(/amount must be >= 1/);

      const answered = await app.inject({ method: 'POST', url: '/echo', payload: { amount: 5 } });
      expect(answered.statusCode).toBe(200);
      // Serialized by the response schema: what it does not name is not written.
      expect(answered.json()).toEqual({ amount: 5 });
    } finally {
      await app.close();
    }
  });
});
