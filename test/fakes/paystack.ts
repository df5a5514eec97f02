/**
 * A local fake of Paystack's HTTP API (api.paystack.co) and hosted checkout (checkout.paystack.com)
 * for the Paystack adapter's tests and the browser tests: a specification of Paystack (STYLE.md 15).
 * Its published sample payloads are in fixtures/paystack/, each naming its source, and its tests
 * replay them. Sources, short-named below:
 *   API    https://paystack.com/docs/api/ (the API reference; its samples are github.com/PaystackOSS/doc-code-snippets)
 *   OAS    github.com/PaystackOSS/openapi dist/paystack.yaml (Paystack's OpenAPI spec)
 *   ERR    https://paystack.com/docs/api/errors/ (PaystackOSS/openapi errors/api-errors.json)
 *   GUIDE  https://paystack.com/docs/payments/ (accept-payments, verify-payments, webhooks, refunds, metadata)
 *
 * The rules it enforces, each with its source:
 * - Every answer is `{status:false, message}` on an error, `{status:true, message, data}` on success (API
 *   "Errors"). Auth: no header, a header not `Bearer …`, an unknown key: 401 with ERR's messages. The key's
 *   prefix is the mode (sk_test_/sk_live_), and each integration sees only its own transactions and refunds.
 * - Initialize (API transaction#initialize, OAS TransactionInitialize): email required and valid, amount a positive
 *   integer in the subunit (a digit string too), reference of "-, ., = and alphanumeric characters" and unique
 *   (400 "Duplicate Transaction Reference"), metadata a "Stringified JSON object" (stored parsed), each message
 *   from ERR. The answer is the published sample's shape (fixtures: transaction_initialize.200).
 * - Currencies are enabled per integration (ERR "Currency not supported by merchant": "not enabled for this
 *   integration"; Paystack's currencies by country, PaystackOSS/paystack-mcp-server src/data/paystack-skill.md:
 *   Nigeria NGN and USD, Ghana GHS, Kenya KES and USD, South Africa ZAR): initialize in any other answers API #supported-currency's body (fixtures: currency_not_supported.400)
 *   with HTTP 400, which Paystack does not publish and integrators report. No currency: the integration's first.
 * - Fees (GUIDE verify-payments sample, fixtures: verify.success_customer_bears_fees.200: amount 40333 =
 *   requested_amount 30050 + fees 10283): `requested_amount` is what was initialized; with "pass fees to
 *   customers" the payer is charged the fee on top (`amount` = requested_amount + fees), else `amount` =
 *   requested_amount and the fee comes out of it. The fee itself is the fake's own flat 1.5% of what was asked.
 * - Verify (API transaction#verify, GUIDE verify-payments): the transaction object of the published sample;
 *   statuses abandoned (initialized, not completed), failed, success, reversed (fully refunded). A reference
 *   the integration does not know (never initialized, or another integration's): OAS lists 404 "Entity not
 *   found" (fixtures: verify.not_found.404_spec), ERR gives "Transaction reference not found", and integrators
 *   see the live API answer it with HTTP 400; the fake answers that (fixtures: verify.not_found.400_live).
 * - The hosted page (GUIDE accept-payments): Pay, Decline, Cancel; the payer goes back to callback_url with
 *   `trxref` and `reference`, or to metadata.cancel_action on Cancel (GUIDE metadata#cancel-action).
 * - Events (GUIDE webhooks; fixtures: webhook.charge_success, webhook.refund_*): POSTed to the integration's
 *   webhook URL with x-paystack-signature = hex HMAC-SHA512 of the raw body keyed with the secret key.
 *   charge.success when a payment succeeds; refund.pending, .processing, .processed, .failed and
 *   .needs-attention as a refund moves, each shaped as its published sample (the amount a string but when
 *   failed or needs-attention; only needs-attention carries the refund's id, a string, and its notes).
 * - Retries (GUIDE webhooks): an event not answered 200 within 30 s is sent again, counted from its first send:
 *   live "every 3 minutes for the first 4 tries" (0, 3, 6, 9 min) "then retried hourly for the next 72 hours";
 *   test "hourly for 10 hours". They go out when the test moves the clock and calls deliverDueWebhooks().
 * - Refunds (API refund#create, GUIDE refunds): full when no amount, never above what remains, not below USD 1
 *   (ERR "Cannot refund less than USD 1"), "Transaction has been fully reversed" once it is. Created "queued"
 *   and `pending` (fixtures: refund_create.200); then, under the test's control, processing, then processed,
 *   failed (the amount is refundable again: "Your account will be credited with refund amount") or
 *   needs-attention. Fetch Refund shows it (fixtures: refund_fetch.200).
 * - List Refunds (API refund#list; OAS and the official SDKs, PaystackOSS/paystack-node ListRequest: only perPage,
 *   default 50, page, from and to): the integration's refunds created in [from, to], newest first, with
 *   Paystack's meta {total, skipped, perPage, page, pageCount} (fixtures: refund_list.200). Any other parameter,
 *   `transaction` included, is ignored. `transaction` in an item is the transaction's integer id.
 * - Retry with customer details (API refund#retry; OAS RefundRetry): POST /refund/retry_with_customer_details/{id}
 *   with refund_account_details {currency, account_number, bank_id}, all required, the currency the payment's;
 *   a refund not in needs-attention gets 422 with the published body (fixtures: refund_retry.422); one in it goes
 *   processing with the published answer (fixtures: refund_retry.200) and refund.processing.
 * - Time is the clock the fake is given (default real time), for timestamps, from/to and retries.
 * Deliberately simpler than Paystack: references are unique across all integrations (Paystack: per
 * integration); an event is sent before the call that caused it answers (Paystack sends it a little later);
 * no request timeouts and no endpoints beyond these. Messages not in ERR (marked "fake's own") are this
 * fake's wording.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakePaystackIntegration {
  /** The integration's secret key (sk_test_… or sk_live_…): its mode and its HMAC key. */
  secretKey: string;
  /** The webhook URL set on its Paystack dashboard (may be set later). */
  webhookUrl?: string;
  /**
   * The currencies enabled on the integration: Paystack enables them per business and country
   * (a Nigerian business has NGN, and USD where enabled). The first is used when initialize names
   * none; initialize in any other answers "Currency not supported by merchant".
   */
  currencies: readonly string[];
  /**
   * "Pass fees to customers" on the dashboard: the payer is charged the fee on top, so verify's
   * `amount` is `requested_amount` + `fees` (Paystack's own verify sample: 40333 = 30050 + 10283).
   */
  feesOnCustomer?: boolean;
}
export interface FakePaystackOptions {
  integrations: FakePaystackIntegration[];
  /** Paystack's clock: its timestamps, List Refunds' from/to and webhook retries (default: real time). */
  clock?: { now(): Date };
}
export interface FakePaystackTransaction {
  id: number;
  reference: string;
  access_code: string;
  secretKey: string;
  domain: 'test' | 'live';
  /** What was initialized: verify's requested_amount. */
  requested_amount: number;
  /** What the payer is charged: requested_amount, plus the fee once paid when the customer bears fees. */
  amount: number;
  /** Paystack's fee in the subunit, once paid (null before). */
  fees: number | null;
  currency: string;
  email: string;
  status: 'abandoned' | 'success' | 'failed' | 'reversed';
  callback_url: string | null;
  metadata: unknown;
  channel: string | null;
  gateway_response: string;
  paid_at: string | null;
  created_at: string;
}
export interface FakePaystackDelivery {
  /** charge.success, refund.pending, … */
  event: string;
  url: string;
  body: string;
  signature: string;
  /** Which try of this event (1: the first send; then Paystack's retries). */
  attempt: number;
  status: number | 'error';
}
/** Paystack's refund statuses (GUIDE refunds). */
export type FakePaystackRefundStatus = 'pending' | 'processing' | 'processed' | 'failed' | 'needs-attention';
export interface FakePaystackRefund {
  id: number;
  /** The refunded transaction's reference. */
  transaction: string;
  amount: number;
  currency: string;
  status: FakePaystackRefundStatus;
  merchant_note: string | null;
  customer_note: string | null;
  integration: number;
  createdAt: string;
  /** The customer's bank account a needs-attention refund was retried to. */
  account: { currency: string; account_number: string; bank_id: string } | null;
}
export interface FakePaystack {
  /** Origin of the API (stands in for https://api.paystack.co), no trailing slash. */
  baseUrl: string;
  /** Origin the authorization_url pages are served from (stands in for https://checkout.paystack.com). */
  checkoutOrigin: string;
  transactions: ReadonlyMap<string, FakePaystackTransaction>;
  refunds: ReadonlyArray<FakePaystackRefund>;
  deliveries: ReadonlyArray<FakePaystackDelivery>;
  setWebhookUrl(secretKey: string, url: string): void;
  /** What the buttons of the hosted page do: 'success' pays (and sends charge.success), 'failed' declines, 'abandon' leaves. Returns the URL the payer's browser is sent to. */
  complete(reference: string, outcome: 'success' | 'failed' | 'abandon'): Promise<string>;
  /** A charge.success body for the transaction and its signature, exactly as Paystack would send it, for tests that tamper with or replay events. */
  signedEvent(reference: string): { body: string; signature: string };
  /**
   * What happens to a refund after Paystack queued it (pending): the processor takes it
   * (processing), then pays it (processed), sends it back (failed: refundable again), or cannot
   * return it to the payment instrument (needs-attention: only a retry with the customer's bank
   * account moves it on). A refund still pending goes through processing first. Each step sends its
   * refund.* event; resolves once sent.
   */
  setRefundStatus(id: number, status: Exclude<FakePaystackRefundStatus, 'pending'>): Promise<void>;
  /** Sends every webhook retry due by the clock (Paystack's schedule, GUIDE webhooks); resolves once sent. */
  deliverDueWebhooks(): Promise<void>;
  close(): Promise<void>;
}

/** The header value Paystack sends: HMAC-SHA512 hex of the raw body with the secret key. */
export function paystackSignature(secretKey: string, body: string): string {
  return createHmac('sha512', secretKey).update(body).digest('hex');
}

/** Every currency Paystack's API takes (PaystackOSS/openapi dist/paystack.yaml components.schemas.Currency). */
const CURRENCIES = new Set(['GHS', 'KES', 'NGN', 'ZAR', 'USD']);
const REFERENCE_CHARS = /^[A-Za-z0-9.=-]+$/;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const MAX_BODY = 1024 * 1024;

interface Integration {
  secretKey: string;
  domain: 'test' | 'live';
  id: number;
  webhookUrl: string | null;
  currencies: readonly string[];
  feesOnCustomer: boolean;
}
interface StoredTransaction extends FakePaystackTransaction {
  ipAddress: string | null;
  customer: { id: number; customer_code: string };
  authorizationCode: string;
  refunded: number;
  /** The charge.success body and signature sent when it was paid: what a replay resends. */
  event: SignedEvent | null;
}
interface SignedEvent {
  event: string;
  body: string;
  signature: string;
}
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Fields the modern error shape adds (meta.nextStep, type, code), where Paystack publishes them. */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

function code(length: number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return Array.from(randomBytes(length), (byte) => alphabet[byte % alphabet.length]).join('');
}
/**
 * When a webhook Paystack could not deliver (no 200 within 30 s) is tried again, counted from its
 * first send (GUIDE webhooks): live, "every 3 minutes for the first 4 tries, then retried hourly for
 * the next 72 hours"; test, "hourly for 10 hours".
 */
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const RETRIES: Record<'test' | 'live', readonly number[]> = {
  live: [3, 6, 9].map((m) => m * MINUTE).concat(Array.from({ length: 72 }, (_, i) => 9 * MINUTE + (i + 1) * HOUR)),
  test: Array.from({ length: 10 }, (_, i) => (i + 1) * HOUR),
};
const WEBHOOK_TIMEOUT_MS = 30_000;
/** A non-negative integer from a number or a digit string; null otherwise. */
function wholeNumber(value: unknown): number | null {
  const n = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : null;
}
/** `url?trxref=REF&reference=REF`, keeping the URL's own query and fragment. */
function withReference(url: string, reference: string): string {
  const [base = '', ...hash] = url.split('#');
  const ref = encodeURIComponent(reference);
  const query = `${base.includes('?') ? '&' : '?'}trxref=${ref}&reference=${ref}`;
  return base + query + (hash.length > 0 ? `#${hash.join('#')}` : '');
}
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
}
function html(res: ServerResponse, status: number, title: string, body: string): void {
  const head = `<meta charset="utf-8"><title>${escapeHtml(title)}</title>`;
  const page = `<!doctype html><html><head>${head}</head><body>${body}</body></html>`;
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' }).end(page);
}
async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new HttpError(413, 'Request entity too large'); // fake's own
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
/** JSON or application/x-www-form-urlencoded, both of which the API accepts. */
async function readFields(req: IncomingMessage): Promise<Record<string, unknown>> {
  const raw = await readBody(req);
  if (raw.trim() === '') return {};
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') return Object.fromEntries(new URLSearchParams(raw));
  try {
    const value: unknown = JSON.parse(raw);
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {}
  throw new HttpError(400, 'Invalid JSON body'); // fake's own
}
function listen(server: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}

export async function startFakePaystack(options: FakePaystackOptions): Promise<FakePaystack> {
  const clock = options.clock ?? { now: () => new Date() };
  /** Paystack's timestamps carry whole seconds: "2020-05-19T12:30:56.000Z". */
  const now = (): string => new Date(Math.floor(clock.now().getTime() / 1000) * 1000).toISOString();
  const integrations = new Map<string, Integration>();
  for (const [index, { secretKey, webhookUrl, currencies, feesOnCustomer }] of options.integrations.entries()) {
    const mode = /^sk_(test|live)_\S+$/.exec(secretKey)?.[1];
    if (mode !== 'test' && mode !== 'live') throw new Error(`not a Paystack secret key: ${secretKey}`);
    if (integrations.has(secretKey)) throw new Error(`secret key listed twice: ${secretKey}`);
    const unknown = currencies.filter((c) => !CURRENCIES.has(c));
    if (currencies.length === 0 || unknown.length > 0) throw new Error(`not Paystack currencies: ${currencies}`);
    const id = 100_000 + index;
    integrations.set(secretKey, {
      secretKey,
      domain: mode,
      id,
      webhookUrl: webhookUrl ?? null,
      currencies,
      feesOnCustomer: feesOnCustomer ?? false,
    });
  }
  const transactions = new Map<string, StoredTransaction>();
  const byAccessCode = new Map<string, StoredTransaction>();
  const customers = new Map<string, { id: number; customer_code: string }>();
  const refunds: FakePaystackRefund[] = [];
  const deliveries: FakePaystackDelivery[] = [];
  /** Events not yet answered 200, with when each was first sent and how many tries it had. */
  const undelivered: Array<{ integration: Integration; event: SignedEvent; firstAt: number; tries: number }> = [];
  let nextId = 4_000_000_001;

  function authenticate(header: string | undefined): Integration {
    if (header === undefined || header.trim() === '') throw new HttpError(401, 'No Authorization Header was found');
    const key = /^Bearer (\S+)$/.exec(header.trim())?.[1];
    if (key === undefined) throw new HttpError(401, 'Format is Authorization Bearer [secret key]');
    const integration = integrations.get(key);
    if (!integration) throw new HttpError(401, 'Invalid key');
    return integration;
  }

  function initialize(integration: Integration, body: Record<string, unknown>) {
    const email = typeof body.email === 'string' ? body.email.trim() : '';
    if (email === '') throw new HttpError(400, 'Email is not allowed to be empty');
    if (!EMAIL.test(email)) throw new HttpError(400, 'Invalid Email Address Passed');
    const amount = wholeNumber(body.amount);
    if (amount === null) throw new HttpError(400, 'Invalid Amount Sent');
    if (amount === 0) throw new HttpError(400, 'You must specify a valid amount');
    const currency = body.currency === undefined || body.currency === '' ? integration.currencies[0] : body.currency;
    // Enabled per integration (the error catalogue: "not enabled for this integration"); the
    // status is not published, integrators report 400.
    if (typeof currency !== 'string' || !integration.currencies.includes(currency)) {
      throw new HttpError(400, 'Currency not supported by merchant');
    }
    let reference: string;
    if (body.reference === undefined || body.reference === null || body.reference === '') {
      do reference = code(10);
      while (transactions.has(reference));
    } else {
      reference = String(body.reference);
      if (!REFERENCE_CHARS.test(reference)) throw new HttpError(400, 'Invalid character in transaction reference');
      if (transactions.has(reference)) throw new HttpError(400, 'Duplicate Transaction Reference');
    }
    // "Stringified JSON object of custom data": a JSON string is stored parsed; none at all reads back as "".
    let metadata: unknown = body.metadata ?? '';
    if (typeof metadata === 'string' && metadata.trim() !== '') {
      try {
        metadata = JSON.parse(metadata);
      } catch {}
    }
    let accessCode: string;
    do accessCode = code(10);
    while (byAccessCode.has(accessCode));
    const customerKey = `${integration.secretKey}\n${email.toLowerCase()}`;
    let customer = customers.get(customerKey);
    if (!customer) {
      customer = { id: nextId++, customer_code: `CUS_${code(15)}` };
      customers.set(customerKey, customer);
    }
    const tx: StoredTransaction = {
      id: nextId++,
      reference,
      access_code: accessCode,
      secretKey: integration.secretKey,
      domain: integration.domain,
      requested_amount: amount,
      amount,
      fees: null,
      currency,
      email,
      status: 'abandoned',
      callback_url: typeof body.callback_url === 'string' && body.callback_url !== '' ? body.callback_url : null,
      metadata,
      channel: null,
      gateway_response: 'The transaction was not completed', // not in the docs read: as commonly reported
      paid_at: null,
      created_at: now(),
      ipAddress: null,
      customer,
      authorizationCode: `AUTH_${code(10)}`,
      refunded: 0,
      event: null,
    };
    transactions.set(reference, tx);
    byAccessCode.set(accessCode, tx);
    const data = { authorization_url: `${checkoutOrigin}/${accessCode}`, access_code: accessCode, reference };
    return { status: true, message: 'Authorization URL created', data };
  }

  /**
   * Paystack's fee, and what the payer is charged. The fee is the fake's own flat 1.5% of what was
   * asked (Paystack's pricing differs by country and channel); with fees passed to the customer it
   * is charged on top, as in Paystack's verify sample (amount = requested_amount + fees).
   */
  function charge(tx: StoredTransaction): void {
    tx.fees = Math.round(tx.requested_amount * 0.015);
    tx.amount = integrations.get(tx.secretKey)!.feesOnCustomer ? tx.requested_amount + tx.fees : tx.requested_amount;
  }

  /** The transaction object as charge.success carries it (verify adds a few fields). */
  function chargeData(tx: StoredTransaction) {
    const charged = tx.status !== 'abandoned';
    const paid = tx.status === 'success' || tx.status === 'reversed';
    return {
      id: tx.id,
      domain: tx.domain,
      status: tx.status,
      reference: tx.reference,
      amount: tx.amount,
      requested_amount: tx.requested_amount,
      message: null,
      gateway_response: tx.gateway_response,
      paid_at: tx.paid_at,
      created_at: tx.created_at,
      channel: tx.channel,
      currency: tx.currency,
      ip_address: tx.ipAddress,
      metadata: tx.metadata,
      log: null,
      fees: paid ? tx.fees : null,
      fees_split: null,
      authorization: charged
        ? {
            authorization_code: tx.authorizationCode,
            ...{ bin: '408408', last4: '4081', exp_month: '12', exp_year: '2030', channel: 'card' },
            ...{ card_type: 'visa ', bank: 'TEST BANK', country_code: 'NG', brand: 'visa', reusable: paid },
            ...{ signature: `SIG_${tx.authorizationCode.slice(5)}`, account_name: null },
          }
        : {},
      customer: {
        ...{ id: tx.customer.id, first_name: null, last_name: null, email: tx.email },
        ...{ customer_code: tx.customer.customer_code, phone: null, metadata: null, risk_action: 'default' },
        international_format_phone: null,
      },
      plan: {},
    };
  }

  function ownTransaction(integration: Integration, idOrReference: string): StoredTransaction | undefined {
    const tx = /^\d+$/.test(idOrReference)
      ? [...transactions.values()].find((t) => String(t.id) === idOrReference)
      : undefined;
    const found = tx ?? transactions.get(idOrReference);
    return found?.secretKey === integration.secretKey ? found : undefined;
  }

  function verify(integration: Integration, reference: string) {
    const tx = transactions.get(reference);
    // The spec lists a 404; the live API answers 400 with the catalogue's message (fixtures:
    // verify.not_found.400_live): the fake answers what live answers.
    if (!tx || tx.secretKey !== integration.secretKey) throw new HttpError(400, 'Transaction reference not found');
    const data = {
      ...chargeData(tx),
      ...{ receipt_number: null, plan: null, split: {}, order_id: null, paidAt: tx.paid_at, createdAt: tx.created_at },
      ...{ pos_transaction_data: null, source: null, fees_breakdown: null },
      connect: null,
      ...{ transaction_date: tx.created_at, plan_object: {}, subaccount: {} },
    };
    return { status: true, message: 'Verification successful', data };
  }

  async function refund(integration: Integration, body: Record<string, unknown>) {
    const idOrReference = typeof body.transaction === 'number' ? String(body.transaction) : body.transaction;
    if (typeof idOrReference !== 'string' || idOrReference === '') {
      throw new HttpError(400, 'Transaction reference or id is required'); // fake's own
    }
    const tx = ownTransaction(integration, idOrReference);
    if (!tx) throw new HttpError(404, 'Transaction not found');
    if (tx.status === 'reversed') throw new HttpError(400, 'Transaction has been fully reversed');
    // fake's own wording:
    if (tx.status !== 'success') throw new HttpError(400, 'Cannot refund a transaction that was not successful');
    const remaining = tx.amount - tx.refunded;
    const amount = body.amount === undefined || body.amount === '' ? remaining : wholeNumber(body.amount);
    if (amount === null || amount === 0) throw new HttpError(400, 'Invalid Amount Sent');
    if (body.currency !== undefined && body.currency !== tx.currency) {
      throw new HttpError(400, 'Currency not supported by merchant'); // a documented message, used here by the fake
    }
    if (tx.currency === 'USD' && amount < 100) throw new HttpError(400, 'Cannot refund less than USD 1');
    if (amount > remaining) {
      throw new HttpError(400, 'Refund amount cannot be more than the original transaction amount'); // fake's own
    }
    // Queued: pending until the processor takes it (setRefundStatus). It is taken from what remains
    // refundable at once, so the same money cannot be refunded twice meanwhile.
    tx.refunded += amount;
    if (tx.refunded === tx.amount) tx.status = 'reversed';
    const at = now();
    const found: FakePaystackRefund = {
      id: nextId++,
      transaction: tx.reference,
      amount,
      currency: tx.currency,
      status: 'pending',
      merchant_note: typeof body.merchant_note === 'string' ? body.merchant_note : null,
      customer_note: typeof body.customer_note === 'string' ? body.customer_note : null,
      integration: integration.id,
      createdAt: at,
      account: null,
    };
    refunds.push(found);
    await sendRefundEvent(found);
    // `data.transaction` as the refunds guide shows it; the refund's own fields as the refund object lists them.
    const { id: txId, domain, reference, amount: txAmount, paid_at, channel, currency } = tx;
    const data = {
      transaction: { id: txId, domain, reference, amount: txAmount, paid_at, channel, currency },
      ...{ integration: integration.id, deducted_amount: 0, channel: null },
      ...{ merchant_note: found.merchant_note, customer_note: found.customer_note, status: 'pending' },
      ...{ refunded_by: null, expected_at: at, currency, domain, amount, fully_deducted: false, id: found.id },
      ...{ createdAt: at, updatedAt: at },
    };
    return { status: true, message: 'Refund has been queued for processing', data };
  }

  /**
   * List Refunds (API refund#list; OAS and the official SDKs document only perPage, default 50,
   * page, from and to): the integration's refunds created in [from, to], newest first, a page at a
   * time with Paystack's meta. Any other parameter (`transaction`, `currency`, …) is ignored.
   */
  function listRefunds(integration: Integration, query: URLSearchParams) {
    const positive = (name: string, fallback: number) => {
      const n = Number(query.get(name));
      return query.has(name) && Number.isSafeInteger(n) && n > 0 ? n : fallback;
    };
    const perPage = positive('perPage', 50);
    const page = positive('page', 1);
    const bound = (name: string) => {
      const t = query.has(name) ? Date.parse(query.get(name)!) : Number.NaN;
      return Number.isNaN(t) ? undefined : t;
    };
    const from = bound('from');
    const to = bound('to');
    const matching = refunds
      .filter((r) => r.integration === integration.id)
      .filter((r) => {
        const t = Date.parse(r.createdAt);
        return (from === undefined || t >= from) && (to === undefined || t <= to);
      })
      .reverse();
    const skipped = (page - 1) * perPage;
    return {
      status: true,
      message: 'Refunds retrieved',
      data: matching.slice(skipped, skipped + perPage).map(refundView),
      meta: { total: matching.length, skipped, perPage, page, pageCount: Math.ceil(matching.length / perPage) },
    };
  }

  /**
   * Retry a needs-attention refund to the customer's bank account (API refund#retry; OAS RefundRetry:
   * refund_account_details {currency, account_number, bank_id}, all required, the currency the
   * payment's). Any other status: 422 with the published body (fixtures: refund_retry.422).
   */
  async function retryRefund(integration: Integration, id: number, body: Record<string, unknown>) {
    const found = refunds.find((r) => r.id === id && r.integration === integration.id);
    if (!found) throw new HttpError(404, 'Refund not found'); // fake's own
    const details = body.refund_account_details as Record<string, unknown> | undefined;
    for (const field of ['currency', 'account_number', 'bank_id']) {
      if (typeof details?.[field] !== 'string' || details[field] === '') {
        throw new HttpError(400, `refund_account_details.${field} is required`); // fake's own
      }
    }
    const account = details as { currency: string; account_number: string; bank_id: string };
    if (account.currency !== found.currency) {
      throw new HttpError(400, 'refund_account_details.currency must be the currency of the payment'); // fake's own
    }
    if (found.status !== 'needs-attention') {
      throw new HttpError(422, 'Invalid Refund state, refund status should be "needs-attention"', {
        meta: { nextStep: "Ensure that the value(s) you're passing are valid." },
        type: 'validation_error',
        code: 'invalid_params',
      });
    }
    found.account = { currency: account.currency, account_number: account.account_number, bank_id: account.bank_id };
    found.status = 'processing';
    await sendRefundEvent(found);
    return {
      status: true,
      message: 'Refund retried and has been queued for processing',
      data: { ...refundView(found), expected_at: now(), bank_reference: null, reason: 'PROCESSING' },
    };
  }

  /** The refund.* event of a refund's status, shaped as Paystack's published samples (fixtures: webhook.refund_*). */
  async function sendRefundEvent(r: FakePaystackRefund): Promise<void> {
    const tx = transactions.get(r.transaction)!;
    const customer = { first_name: null, last_name: null, email: tx.email };
    const common = { status: r.status, transaction_reference: tx.reference };
    const processorReference = `TRF_${r.id.toString(36)}`;
    const data =
      r.status === 'needs-attention'
        ? {
            ...common,
            refund_reference: processorReference,
            ...{ amount: r.amount, currency: r.currency, customer, integration: r.integration, domain: tx.domain },
            ...{ id: String(r.id), customer_note: r.customer_note, merchant_note: r.merchant_note },
          }
        : {
            ...common,
            // Published as null until the processor has it, and the amount as a string but when failed.
            refund_reference: r.status === 'pending' || r.status === 'processing' ? null : processorReference,
            amount: r.status === 'failed' ? r.amount : String(r.amount),
            ...{ currency: r.currency, processor: 'instant-transfer', customer, integration: r.integration },
            domain: tx.domain,
          };
    await sendEvent(integrations.get(tx.secretKey)!, signed(tx.secretKey, { event: `refund.${r.status}`, data }));
  }

  function signed(secretKey: string, event: { event: string; data: unknown }): SignedEvent {
    const body = JSON.stringify(event);
    return { event: event.event, body, signature: paystackSignature(secretKey, body) };
  }

  /** Sends an event for the first time; one not answered 200 is tried again on Paystack's schedule. */
  async function sendEvent(integration: Integration, event: SignedEvent): Promise<void> {
    if (integration.webhookUrl === null) return;
    if (!(await post(integration, event, 1))) {
      undelivered.push({ integration, event, firstAt: clock.now().getTime(), tries: 1 });
    }
  }

  /** One try; whether it was answered 200 (GUIDE webhooks: "Without a 200 OK in the response header"). */
  async function post(integration: Integration, event: SignedEvent, attempt: number): Promise<boolean> {
    const url = integration.webhookUrl;
    if (url === null) return false;
    let status: number | 'error';
    try {
      const headers = { 'content-type': 'application/json', 'x-paystack-signature': event.signature };
      const res = await fetch(url, {
        method: 'POST',
        headers,
        body: event.body,
        redirect: 'manual',
        signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
      });
      status = res.status;
      await res.arrayBuffer().catch(() => undefined);
    } catch {
      status = 'error';
    }
    deliveries.push({ event: event.event, url, body: event.body, signature: event.signature, attempt, status });
    return status === 200;
  }

  async function deliverDueWebhooks(): Promise<void> {
    const at = clock.now().getTime();
    for (const pending of [...undelivered]) {
      const schedule = RETRIES[pending.integration.domain];
      // Every try the schedule had due by now, in order, until one is answered 200.
      while (pending.tries - 1 < schedule.length && pending.firstAt + schedule[pending.tries - 1]! <= at) {
        pending.tries += 1;
        if (await post(pending.integration, pending.event, pending.tries)) {
          pending.tries = Number.POSITIVE_INFINITY;
        }
      }
      if (pending.tries > schedule.length) undelivered.splice(undelivered.indexOf(pending), 1);
    }
  }

  /** Where the payer lands once the page is done with them. */
  function landing(tx: StoredTransaction): string {
    return tx.callback_url === null
      ? `${checkoutOrigin}/${tx.access_code}`
      : withReference(tx.callback_url, tx.reference);
  }

  async function settle(tx: StoredTransaction, outcome: 'success' | 'failed' | 'abandon', ip: string | null) {
    if (tx.status !== 'abandoned') throw new Error(`transaction ${tx.reference} is already ${tx.status}`);
    if (outcome === 'abandon') {
      const meta = tx.metadata as { cancel_action?: unknown } | null;
      const cancel = typeof meta === 'object' && meta !== null ? meta.cancel_action : undefined;
      return typeof cancel === 'string' && cancel !== '' ? cancel : landing(tx);
    }
    tx.channel = 'card';
    tx.ipAddress = ip;
    if (outcome === 'failed') {
      tx.status = 'failed';
      tx.gateway_response = 'Declined';
      return landing(tx);
    }
    tx.status = 'success';
    tx.gateway_response = 'Successful';
    tx.paid_at = now();
    charge(tx);
    tx.event = signed(tx.secretKey, { event: 'charge.success', data: chargeData(tx) });
    await sendEvent(integrations.get(tx.secretKey)!, tx.event);
    return landing(tx);
  }

  function checkoutPage(tx: StoredTransaction): [number, string] {
    const money = `${tx.currency} ${(tx.amount / 100).toLocaleString('en-US', { minimumFractionDigits: 2 })}`;
    const head = `<h1>Pay ${escapeHtml(money)}</h1><p class="email">${escapeHtml(tx.email)}</p>`;
    if (tx.status !== 'abandoned') {
      return [200, `${head}<p class="status">This transaction has already been completed (${tx.status}).</p>`];
    }
    const button = (path: string, label: string) =>
      `<form method="post" action="/${tx.access_code}/${path}"><button type="submit">${label}</button></form>`;
    return [200, head + button('pay', 'Pay') + button('decline', 'Decline') + button('cancel', 'Cancel')];
  }

  async function handleCheckout(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', checkoutOrigin).pathname;
    const match = /^\/([a-z0-9]+)(?:\/(pay|decline|cancel))?$/.exec(path);
    const tx = match ? byAccessCode.get(match[1]!) : undefined;
    if (!match || !tx) return html(res, 404, 'Not found', '<p>This payment page does not exist.</p>');
    const action = match[2];
    if (req.method !== (action ? 'POST' : 'GET')) return html(res, 405, 'Method not allowed', '');
    await readBody(req);
    if (!action || tx.status !== 'abandoned') {
      const [status, body] = checkoutPage(tx);
      return html(res, action ? 409 : status, 'Paystack Checkout', body);
    }
    const outcome = action === 'pay' ? 'success' : action === 'decline' ? 'failed' : 'abandon';
    const location = await settle(tx, outcome, req.socket.remoteAddress ?? null);
    res.writeHead(302, { location }).end();
  }

  async function handleApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const integration = authenticate(req.headers.authorization);
      const path = new URL(req.url ?? '/', baseUrl).pathname;
      const verifyMatch = /^\/transaction\/verify\/([^/]+)$/.exec(path);
      if (req.method === 'POST' && path === '/transaction/initialize') {
        return send(res, 200, initialize(integration, await readFields(req)));
      }
      if (req.method === 'GET' && verifyMatch)
        return send(res, 200, verify(integration, decodeURIComponent(verifyMatch[1]!)));
      if (req.method === 'POST' && path === '/refund')
        return send(res, 200, await refund(integration, await readFields(req)));
      // List Transactions: its rules are in the listing section at the end of this file.
      if (req.method === 'GET' && path === '/transaction') {
        const own = [...transactions.values()].filter((t) => t.secretKey === integration.secretKey);
        const params = new URL(req.url ?? '/', baseUrl).searchParams;
        return send(
          res,
          200,
          listTransactions(own, params, (t) => verify(integration, t.reference).data),
        );
      }
      // List refunds (https://paystack.com/docs/api/refund/#list): only its documented parameters.
      if (req.method === 'GET' && path === '/refund') {
        return send(res, 200, listRefunds(integration, new URL(req.url ?? '/', baseUrl).searchParams));
      }
      // Fetch a refund (https://paystack.com/docs/api/refund/#fetch).
      const refundMatch = /^\/refund\/(\d+)$/.exec(path);
      if (req.method === 'GET' && refundMatch) {
        const found = refunds.find((r) => r.id === Number(refundMatch[1]) && r.integration === integration.id);
        if (!found) throw new HttpError(404, 'Refund not found'); // fake's own
        return send(res, 200, { status: true, message: 'Refund retrieved', data: refundView(found) });
      }
      const retryMatch = /^\/refund\/retry_with_customer_details\/(\d+)$/.exec(path);
      if (req.method === 'POST' && retryMatch) {
        return send(res, 200, await retryRefund(integration, Number(retryMatch[1]), await readFields(req)));
      }
      throw new HttpError(404, 'Not found'); // fake's own
    } catch (error) {
      if (error instanceof HttpError) {
        return send(res, error.status, { status: false, message: error.message, ...error.extra });
      }
      throw error;
    }
  }

  const serve = (handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>) =>
    createServer((req, res) => {
      handler(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
  const apiServer = serve(handleApi);
  const checkoutServer = serve(handleCheckout);
  const baseUrl = await listen(apiServer);
  const checkoutOrigin = await listen(checkoutServer);

  /** A refund as Fetch Refund and List Refunds show it (fixtures: refund_fetch.200, refund_list.200). */
  function refundView(r: FakePaystackRefund) {
    const tx = transactions.get(r.transaction)!;
    return {
      integration: r.integration,
      transaction: tx.id,
      dispute: null,
      settlement: null,
      id: r.id,
      domain: tx.domain,
      currency: r.currency,
      amount: r.amount,
      status: r.status,
      refunded_at: r.status === 'processed' ? r.createdAt : null,
      refunded_by: null,
      expected_at: r.createdAt,
      channel: tx.channel,
      customer_note: r.customer_note,
      merchant_note: r.merchant_note,
      deducted_amount: r.amount,
      fully_deducted: true,
      createdAt: r.createdAt,
      updatedAt: r.createdAt,
    };
  }

  /** Where a refund may go next (GUIDE refunds): a needs-attention one only by a retry. */
  const NEXT: Record<FakePaystackRefundStatus, readonly FakePaystackRefundStatus[]> = {
    pending: ['processing'],
    processing: ['processed', 'failed', 'needs-attention'],
    'needs-attention': [],
    processed: [],
    failed: [],
  };

  async function moveRefund(found: FakePaystackRefund, status: FakePaystackRefundStatus): Promise<void> {
    if (found.status === 'pending' && status !== 'processing') await moveRefund(found, 'processing');
    if (!NEXT[found.status].includes(status)) throw new Error(`refund ${found.id} is ${found.status}, not ${status}`);
    if (status === 'failed') {
      // "Your account will be credited with refund amount": the transaction is refundable again by that much.
      const tx = transactions.get(found.transaction)!;
      tx.refunded -= found.amount;
      if (tx.status === 'reversed') tx.status = 'success';
    }
    found.status = status;
    await sendRefundEvent(found);
  }

  function find(reference: string): StoredTransaction {
    const tx = transactions.get(reference);
    if (!tx) throw new Error(`no transaction with reference ${reference}`);
    return tx;
  }

  return {
    baseUrl,
    checkoutOrigin,
    transactions,
    refunds,
    deliveries,
    setWebhookUrl(secretKey, url) {
      const integration = integrations.get(secretKey);
      if (!integration) throw new Error(`unknown secret key ${secretKey}`);
      integration.webhookUrl = url;
    },
    complete: (reference, outcome) => settle(find(reference), outcome, null),
    setRefundStatus(id, status) {
      const found = refunds.find((r) => r.id === id);
      if (!found) throw new Error(`no refund ${id}`);
      return moveRefund(found, status);
    },
    deliverDueWebhooks,
    signedEvent(reference) {
      const tx = find(reference);
      if (tx.event) return { body: tx.event.body, signature: tx.event.signature };
      // Never paid: the event Paystack would send were it paid now, without paying it.
      const paid: StoredTransaction = { ...tx, status: 'success', gateway_response: 'Successful', channel: 'card' };
      charge(paid);
      const { body, signature } = signed(tx.secretKey, {
        event: 'charge.success',
        data: chargeData({ ...paid, paid_at: now() }),
      });
      return { body, signature };
    },
    close: async () => {
      await Promise.all(
        [apiServer, checkoutServer].map(
          (server) =>
            new Promise<void>((resolve, reject) => {
              server.close((error) => (error ? reject(error) : resolve()));
              server.closeAllConnections();
            }),
        ),
      );
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// List Transactions (GET /transaction), which the daily reconciliation reads. Its own section.
// Parameters as PaystackOSS/openapi dist/paystack.yaml (@9678dea) lists them for transaction_list;
// the answer's shapes as the same spec's TransactionListResponse (page style) and as the sample on
// https://paystack.com/docs/api/transaction/#list (cursor style; fixtures/paystack/transaction_list.json).

/** The spec's enum for `status`. */
const LIST_STATUSES = new Set(['success', 'failed', 'abandoned', 'reversed']);

/**
 * One page of an integration's transactions, newest first, each item the transaction object verify
 * returns (the list sample's items carry the same fields: amount, requested_amount, fees, …).
 * - `per_page` (snake case here, spec) and `page` (1-based, spec: "The offset to retrieve data
 *   from"); 50 a page when none is given, as the sample's meta says.
 * - `from` / `to` (spec: date-time, "The start date" / "The end date"): the spec does not say of
 *   what; the fake filters on created_at, inclusive, which an adapter must allow for.
 * - `status` (spec enum): only those; another value is a 400 (fake's own wording).
 * - `use_cursor=true` (spec) pages by the opaque `next` / `previous` cursors instead, with meta
 *   {next, previous, perPage} as in the published sample; otherwise meta is the spec's required
 *   {total, total_volume, skipped, perPage, page, pageCount}.
 * The other filters the spec lists (customer_code, amount, settlement, channel, …) are not
 * implemented: a request using one gets a 400 (fake's own) rather than an unfiltered answer.
 */
function listTransactions<T extends FakePaystackTransaction>(
  own: readonly T[],
  params: URLSearchParams,
  view: (transaction: T) => unknown,
) {
  const known = new Set(['use_cursor', 'next', 'previous', 'per_page', 'page', 'from', 'to', 'status']);
  for (const name of params.keys()) {
    if (!known.has(name)) throw new HttpError(400, `The fake does not implement the ${name} filter`); // fake's own
  }
  const whole = (name: string, fallback: number): number => {
    const raw = params.get(name);
    if (raw === null || raw === '') return fallback;
    const n = wholeNumber(raw);
    if (n === null || n === 0) throw new HttpError(400, `${name} must be a positive integer`); // fake's own
    return n;
  };
  const instant = (name: string): number | null => {
    const raw = params.get(name);
    if (raw === null || raw === '') return null;
    const at = Date.parse(raw);
    if (Number.isNaN(at)) throw new HttpError(400, `${name} must be a date`); // fake's own
    return at;
  };
  const status = params.get('status');
  if (status !== null && !LIST_STATUSES.has(status)) {
    throw new HttpError(400, `status must be one of ${[...LIST_STATUSES].join(', ')}`); // fake's own
  }
  const from = instant('from');
  const to = instant('to');
  const perPage = whole('per_page', 50);
  const matching = own
    .filter((t) => {
      const created = Date.parse(t.created_at);
      return (
        (status === null || t.status === status) && (from === null || created >= from) && (to === null || created <= to)
      );
    })
    .sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at) || b.id - a.id);
  if (params.get('use_cursor') === 'true') {
    const cursor = params.get('next') ?? params.get('previous');
    const start = cursor === null ? 0 : Number(Buffer.from(cursor, 'base64').toString('utf8'));
    if (!Number.isSafeInteger(start) || start < 0) throw new HttpError(400, 'Invalid cursor'); // fake's own
    const page = matching.slice(start, start + perPage);
    const cursorAt = (offset: number) => Buffer.from(String(offset)).toString('base64');
    return {
      status: true,
      message: 'Transactions retrieved',
      data: page.map(view),
      meta: {
        next: start + perPage < matching.length ? cursorAt(start + perPage) : null,
        previous: start > 0 ? cursorAt(Math.max(0, start - perPage)) : null,
        perPage,
      },
    };
  }
  const page = whole('page', 1);
  const skipped = (page - 1) * perPage;
  return {
    status: true,
    message: 'Transactions retrieved',
    data: matching.slice(skipped, skipped + perPage).map(view),
    meta: {
      total: matching.length,
      total_volume: matching.reduce((sum, t) => sum + t.amount, 0),
      skipped,
      perPage,
      page,
      pageCount: Math.ceil(matching.length / perPage),
    },
  };
}
