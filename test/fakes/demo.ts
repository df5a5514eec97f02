/**
 * `npm run fake-rails`: the Paystack and Daraja fakes on local ports, and a page that plays the
 * payer's M-Pesa phone, for trying the live rails by hand (docs/rails.md, "Trying it locally").
 * Start this first, then plainpay with the environment it prints, then set the rails' collection accounts.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MPESA_APP, PAYSTACK_TEST_KEY } from './credentials.ts';
import { startFakeDaraja } from './daraja.ts';
import { startFakePaystack } from './paystack.ts';

const plainpay = (process.env.PLAINPAY_URL ?? 'http://localhost:3000').replace(/\/$/, '');
const paystack = await startFakePaystack({
  integrations: [
    {
      secretKey: PAYSTACK_TEST_KEY,
      webhookUrl: `${plainpay}/hooks/paystack`,
      // Every currency plainpay offers on Paystack, to try them all (a real integration has its country's).
      currencies: ['NGN', 'GHS', 'KES', 'ZAR'],
    },
  ],
});
const daraja = await startFakeDaraja({
  apps: [
    {
      consumerKey: MPESA_APP.consumer_key,
      consumerSecret: MPESA_APP.consumer_secret,
      shortcode: MPESA_APP.shortcode,
      passkey: MPESA_APP.passkey,
    },
  ],
});

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const ACTIONS = { accept: 'Enter PIN (pay)', cancel: 'Cancel', timeout: 'Ignore (time out)' } as const;

const phone = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://phone');
  const action = /^\/([^/]+)\/(accept|cancel|timeout)$/.exec(url.pathname);
  if (req.method === 'POST' && action) {
    const [, id, what] = action as unknown as [string, string, keyof typeof ACTIONS];
    void daraja.phone[what](decodeURIComponent(id)).finally(() => {
      res.writeHead(303, { location: '/' }).end();
    });
    return;
  }
  const pending = [...daraja.pushes.values()].filter((p) => p.state === 'pending');
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(`<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="3"><title>Fake M-Pesa phone</title>
<h1>Fake M-Pesa phone</h1>${pending.length === 0 ? '<p>No prompt. Pay a KES checkout with M-Pesa; this page refreshes itself.</p>' : ''}
${pending
  .map(
    (
      p,
    ) => `<section><p>Pay KSh ${p.amount} to ${escapeHtml(p.shortcode)} (account ${escapeHtml(p.accountReference)}) from ${escapeHtml(p.phone)}?</p>
${Object.entries(ACTIONS)
  .map(
    ([a, label]) =>
      `<form method="post" action="/${encodeURIComponent(p.checkoutRequestId)}/${a}" style="display:inline"><button>${label}</button></form>`,
  )
  .join(' ')}</section>`,
  )
  .join('\n')}`);
});
await new Promise<void>((resolve) => phone.listen(Number(process.env.FAKE_PHONE_PORT ?? 0), '127.0.0.1', resolve));
const phoneUrl = `http://127.0.0.1:${(phone.address() as AddressInfo).port}`;

console.log(`Fake Paystack API:   ${paystack.baseUrl}  (secret key ${PAYSTACK_TEST_KEY})
Fake Paystack pages: ${paystack.checkoutOrigin}
Fake Daraja:         ${daraja.baseUrl}
Fake M-Pesa phone:   ${phoneUrl}   <- open it to answer M-Pesa prompts

1. Start plainpay pointed at them:
   PAYSTACK_BASE_URL=${paystack.baseUrl} PAYSTACK_CHECKOUT_ORIGIN=${paystack.checkoutOrigin} MPESA_SANDBOX_BASE_URL=${daraja.baseUrl} PUBLIC_BASE_URL=${plainpay} npm start

2. As the operator, set both rails' collection accounts (in another terminal, beside it):
   echo '{"secret_key":"${PAYSTACK_TEST_KEY}"}' > /tmp/paystack.json && npx plainpay collection set paystack --credentials /tmp/paystack.json
   echo '${JSON.stringify(MPESA_APP)}' > /tmp/mpesa.json && npx plainpay collection set mpesa --credentials /tmp/mpesa.json

3. Create a KES or NGN payment and open its checkout_url. Ctrl-C stops the fakes.`);

process.on('SIGINT', () => {
  phone.close();
  void Promise.all([paystack.close(), daraja.close()]).then(() => process.exit(0));
});
