// Test support for the daily reconciliation (docs/reconciliation.md): Daraja's Pull registration
// and the day an instant falls in.

import type { FakeDaraja } from '../fakes/daraja.ts';
import type { MPESA_APP } from '../fakes/credentials.ts';

/**
 * The operator's one-time Register Pull for the shortcode (Daraja's Pull page): plainpay itself
 * only queries. With the app's own token, as the operator would call it.
 */
export async function registerPull(daraja: FakeDaraja, app: typeof MPESA_APP): Promise<void> {
  const basic = Buffer.from(`${app.consumer_key}:${app.consumer_secret}`).toString('base64');
  const token = await fetch(`${daraja.baseUrl}/oauth/v1/generate?grant_type=client_credentials`, {
    headers: { authorization: `Basic ${basic}` },
  });
  const { access_token } = (await token.json()) as { access_token: string };
  const res = await fetch(`${daraja.baseUrl}/pulltransactions/v1/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${access_token}` },
    body: JSON.stringify({
      ShortCode: app.shortcode,
      RequestType: 'Pull',
      NominatedNumber: '0722000000',
      CallBackURL: 'https://operator.example/pull',
    }),
  });
  const answer = (await res.json()) as { ResponseStatus?: string };
  if (answer.ResponseStatus !== '1000' && answer.ResponseStatus !== '1001') {
    throw new Error(`Register Pull failed: ${JSON.stringify(answer)}`);
  }
}

/** The UTC day (YYYY-MM-DD) an instant falls in. */
export function dayOf(at: Date): string {
  return at.toISOString().slice(0, 10);
}
