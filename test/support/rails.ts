import type { FastifyInstance } from 'fastify';
import type { Logger } from '../../src/core/logger.ts';
import type { ProviderRail } from '../../src/db/tables/rails.ts';
import {
  type CollectionAccount,
  parseRailCredentials,
  setOperatorCollection,
} from '../../src/payments/rails/collections.ts';
import { buildCheckoutApp } from '../../src/checkout/app.ts';
import { type FakeDaraja, startFakeDaraja } from '../fakes/daraja.ts';
import { type FakePaystack, type FakePaystackIntegration, startFakePaystack } from '../fakes/paystack.ts';
import { paystackRail } from '../../src/payments/rails/paystack.ts';
import { afterFile } from './after-file.ts';
import { testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from './harness.ts';
import { freePort } from './server.ts';
import { MPESA_APP, PAYSTACK_LIVE_KEY, PAYSTACK_MERCHANT_OWN_KEY, PAYSTACK_TEST_KEY } from '../fakes/credentials.ts';

export { MPESA_APP, PAYSTACK_LIVE_KEY, PAYSTACK_MERCHANT_OWN_KEY, PAYSTACK_TEST_KEY } from '../fakes/credentials.ts';

/** The currencies plainpay offers on Paystack. */
const PAYSTACK_OFFERED = paystackRail.currencies;

export interface RailsWorld {
  runtime: TestRuntime;
  /** The API host, listening: the providers call it back. */
  api: FastifyInstance;
  apiUrl: string;
  /** The checkout host, listening (the browser tests open it). */
  checkout: FastifyInstance;
  checkoutUrl: string;
  paystack: FakePaystack;
  daraja: FakeDaraja;
  merchant: TestAccount;
}

/**
 * plainpay between the two providers' fakes, all on real ports: Paystack's events and Daraja's
 * callbacks reach the API host over HTTP exactly as they would in production.
 */
export async function railsWorld(
  options: {
    merchantName?: string;
    /** What plainpay is given as Daraja's addresses, from the fake's own (a proxy in front of it, say). */
    darajaUrl?: (fakeUrl: string) => Promise<string>;
    /** Likewise for Paystack's API. */
    paystackUrl?: (fakeUrl: string) => Promise<string>;
    /** More Paystack integrations (their webhook URL is plainpay's). */
    paystackIntegrations?: Array<Omit<FakePaystackIntegration, 'webhookUrl'>>;
    /**
     * PUBLIC_BASE_URL, when it is not the API host's own address (an HTTPS name, as Daraja
     * production requires): the fake Daraja delivers callbacks on it to the API host, as DNS and a
     * TLS proxy would.
     */
    publicBaseUrl?: string;
    /** More of plainpay's environment (METRICS_TOKEN, say). */
    env?: Record<string, string>;
    /** plainpay's logger (a test reading what it logged). */
    logger?: Logger;
  } = {},
): Promise<RailsWorld> {
  let runtime: TestRuntime | undefined;
  const apiPort = await freePort();
  const checkoutPort = await freePort();
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const checkoutUrl = `http://127.0.0.1:${checkoutPort}`;
  // Paystack and plainpay read one clock, as both read real time: a test that moves plainpay's moves Paystack's.
  const clock = { now: (): Date => runtime?.clock.now() ?? new Date() };
  const paystack = await startFakePaystack({
    clock,
    integrations: [
      // Every currency plainpay offers on Paystack, enabled at once (a real integration has its
      // country's): the tests of one currency refused give an integration of their own.
      { secretKey: PAYSTACK_TEST_KEY, webhookUrl: `${apiUrl}/hooks/paystack`, currencies: PAYSTACK_OFFERED },
      { secretKey: PAYSTACK_LIVE_KEY, webhookUrl: `${apiUrl}/hooks/paystack`, currencies: PAYSTACK_OFFERED },
      { secretKey: PAYSTACK_MERCHANT_OWN_KEY, webhookUrl: `${apiUrl}/hooks/paystack`, currencies: ['NGN'] },
      ...(options.paystackIntegrations ?? []).map((i) => ({ ...i, webhookUrl: `${apiUrl}/hooks/paystack` })),
    ],
  });
  afterFile(() => paystack.close());
  const publicOrigin = options.publicBaseUrl && new URL(options.publicBaseUrl).origin;
  const daraja = await startFakeDaraja({
    // The same app in both of Daraja's environments (a sandbox app and a production app).
    apps: (['sandbox', 'production'] as const).map((environment) => ({
      consumerKey: MPESA_APP.consumer_key,
      consumerSecret: MPESA_APP.consumer_secret,
      shortcode: MPESA_APP.shortcode,
      passkey: MPESA_APP.passkey,
      environment,
    })),
    resolveCallback: (url) => (url.origin === publicOrigin ? `${apiUrl}${url.pathname}` : undefined),
  });
  afterFile(() => daraja.close());
  const viaProxy = (url: string) => (options.darajaUrl ? options.darajaUrl(url) : Promise.resolve(url));
  const paystackUrl = options.paystackUrl ? await options.paystackUrl(paystack.baseUrl) : paystack.baseUrl;
  runtime = await testRuntime(
    {
      PUBLIC_BASE_URL: options.publicBaseUrl ?? apiUrl,
      CHECKOUT_BASE_URL: checkoutUrl,
      PAYSTACK_BASE_URL: paystackUrl,
      PAYSTACK_CHECKOUT_ORIGIN: paystack.checkoutOrigin,
      MPESA_SANDBOX_BASE_URL: await viaProxy(daraja.baseUrl),
      MPESA_PRODUCTION_BASE_URL: await viaProxy(daraja.productionBaseUrl),
      WEBHOOK_ALLOW_PRIVATE: 'true',
      ...options.env,
    },
    options.logger ? { logger: options.logger } : {},
  );
  const api = await testApp(runtime);
  await api.listen({ port: apiPort, host: '127.0.0.1' });
  const checkout = await buildCheckoutApp(runtime);
  afterFile(() => checkout.close());
  await checkout.listen({ port: checkoutPort, host: '127.0.0.1' });
  const merchant = await testAccount(runtime, { name: options.merchantName ?? 'Ada Stores' });
  return { runtime, api, apiUrl, checkout, checkoutUrl, paystack, daraja, merchant };
}

/**
 * The operator sets a rail's collection account, as `plainpay collection set` does: instance-wide
 * by default, or for one account. Live or test follows the credentials (sk_live_…, production).
 */
export async function operatorCollects(
  runtime: TestRuntime,
  rail: ProviderRail,
  body: Record<string, unknown>,
  options: { livemode?: boolean; accountId?: string } = {},
): Promise<CollectionAccount> {
  const livemode = options.livemode ?? false;
  return setOperatorCollection(
    runtime.db,
    runtime.secretBox,
    { rail, livemode, accountId: options.accountId ?? null },
    parseRailCredentials(rail, livemode, body),
    runtime.clock.now(),
  );
}
