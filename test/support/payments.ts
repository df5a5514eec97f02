import type { FastifyInstance } from 'fastify';
import { bearer } from './harness.ts';

export const VALID_PAYMENT = {
  amount: 5000,
  currency: 'NGN',
  redirect_url: 'https://shop.example/thanks',
} as const;

export function createPaymentRequest(
  app: FastifyInstance,
  key: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  return app.inject({
    method: 'POST',
    url: '/v1/payments',
    headers: { ...bearer(key), 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(body),
  });
}

export async function createPayment(app: FastifyInstance, key: string, body: Record<string, unknown> = {}) {
  const res = await createPaymentRequest(app, key, { ...VALID_PAYMENT, ...body });
  if (res.statusCode !== 200) throw new Error(`create payment failed: ${res.statusCode} ${res.body}`);
  return res.json();
}

export async function payPayment(
  app: FastifyInstance,
  key: string,
  id: string,
  outcome: 'succeeded' | 'declined' = 'succeeded',
) {
  return app.inject({
    method: 'POST',
    url: `/v1/test_helpers/payments/${id}/pay`,
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: { outcome },
  });
}
