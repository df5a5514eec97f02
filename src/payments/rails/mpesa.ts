import { AppError } from '../../core/errors.ts';
import type { PaymentRow } from '../../db/database.ts';
import type { Runtime } from '../../runtime.ts';
import type { MpesaCredentials } from './collections.ts';
import { type ProviderRailAdapter, type ProviderVerdict, providerCall, RailUnavailableError } from './rail.ts';
import type { ProviderCollectedPayment } from './rail.ts';

/**
 * M-Pesa Express (STK Push) on Safaricom Daraja, as documented at
 * https://developer.safaricom.co.ke/APIs/MpesaExpressSimulate and …/MpesaExpressQuery: an OAuth
 * client-credentials token, a push with Password = base64(shortcode + passkey + timestamp), the
 * payer's PIN prompt on the phone, and a result callback that carries no signature. plainpay
 * trusts the callback only after the STK query API confirms it (docs/rails.md).
 */

/** M-Pesa moves whole shillings, up to the per-transaction limit. */
const MAX_KES = 250_000n;

export interface MpesaPayer {
  phone: string;
}

export const mpesaRail: ProviderRailAdapter<'mpesa', MpesaPayer> = {
  name: 'mpesa',
  label: 'M-Pesa',
  currencies: ['KES'],
  unansweredStartMayReachPayer: true,
  takes: (payment: PaymentRow) =>
    payment.currency === 'KES' &&
    payment.amount_minor % 100n === 0n &&
    payment.amount_minor >= 100n &&
    payment.amount_minor <= MAX_KES * 100n,
  readPayer(form) {
    const phone = normaliseKenyanPhone(form.get('phone') ?? '');
    if (!phone) {
      throw new AppError(
        'invalid_request',
        'Enter the Safaricom number of your M-Pesa phone, like 0712 345 678 or +254 712 345 678.',
        { param: 'phone' },
      );
    }
    return { phone };
  },
  payerHint: ({ phone }) => `${phone.slice(0, 4)}******${phone.slice(-2)}`,

  async start({ runtime, credentials, attempt, payment, payer, callbackUrl }) {
    const timestamp = darajaTimestamp(runtime.clock.now());
    const { status, body } = await authorizedCall(runtime, credentials, '/mpesa/stkpush/v1/processrequest', {
      BusinessShortCode: credentials.shortcode,
      Password: stkPassword(credentials.shortcode, credentials.passkey, timestamp),
      Timestamp: timestamp,
      TransactionType: credentials.transaction_type,
      Amount: Number((attempt.amount_minor ?? 0n) / 100n),
      PartyA: payer.phone,
      PartyB: credentials.party_b ?? credentials.shortcode,
      PhoneNumber: payer.phone,
      CallBackURL: callbackUrl,
      // Shown on the payer's phone: the merchant's reference where there is one (12 characters at most).
      AccountReference:
        (payment.reference ?? payment.id.slice(4)).replace(/[^A-Za-z0-9-]/g, '').slice(0, 12) || 'plainpay',
      TransactionDesc: 'Payment',
    });
    if (status !== 200 || body?.ResponseCode !== '0' || typeof body.CheckoutRequestID !== 'string') {
      throw new RailUnavailableError(
        'mpesa',
        `M-Pesa did not send the request to the phone: ${messageOf(body, status)}`,
        status,
      );
    }
    return { providerReference: body.CheckoutRequestID };
  },

  async verify({ runtime, credentials, attempt }) {
    // The push's answer was lost: only its callback can name it; until then (and the give-up) it is open.
    if (!attempt.provider_reference) return { outcome: 'pending', detail: 'M-Pesa: the push was not acknowledged yet' };
    const timestamp = darajaTimestamp(runtime.clock.now());
    const { status, body } = await authorizedCall(runtime, credentials, '/mpesa/stkpushquery/v1/query', {
      BusinessShortCode: credentials.shortcode,
      Password: stkPassword(credentials.shortcode, credentials.passkey, timestamp),
      Timestamp: timestamp,
      CheckoutRequestID: attempt.provider_reference,
    });
    // Daraja's documented answer while the payer has not answered the prompt yet.
    // (The same code with another message, "Wrong credentials" say, is a refusal, not a wait.)
    if (body?.errorCode === '500.001.1001' && /being processed/i.test(String(body.errorMessage))) {
      return { outcome: 'pending', detail: `M-Pesa: ${String(body.errorMessage)}` };
    }
    if (status !== 200 || body?.ResponseCode !== '0' || body.ResultCode === undefined) {
      throw new RailUnavailableError('mpesa', `M-Pesa query failed: ${messageOf(body, status)}`, status);
    }
    if (body.CheckoutRequestID !== attempt.provider_reference) {
      throw new RailUnavailableError('mpesa', 'M-Pesa answered the query about another request');
    }
    return verdictOf(
      String(body.ResultCode),
      String(body.ResultDesc ?? ''),
      attempt.provider_reference,
      attempt.amount_minor,
    );
  },
};

/**
 * Daraja's result codes as outcomes. A success confirms what the push asked: M-Pesa charges the
 * pushed Amount, which the query does not repeat; the callback's Amount is checked against it too.
 */
function verdictOf(
  resultCode: string,
  resultDesc: string,
  reference: string,
  amountMinor: bigint | null,
): ProviderVerdict {
  const detail = `M-Pesa ${resultCode}: ${resultDesc}`;
  switch (resultCode) {
    case '0':
      return {
        outcome: 'succeeded',
        detail,
        confirmed: { amount_minor: String(amountMinor), currency: 'KES', reference },
      };
    case '1032':
      return { outcome: 'cancelled', detail };
    case '1037':
      return { outcome: 'timed_out', detail };
    default:
      return { outcome: 'declined', detail };
  }
}

/** 07XX…, 01XX…, 7XX…, +2547…, 2547… (spaces and dashes allowed) → 2547XXXXXXXX / 2541XXXXXXXX. */
export function normaliseKenyanPhone(input: string): string | undefined {
  const digits = input.replace(/[\s().-]/g, '').replace(/^\+/, '');
  if (!/^\d+$/.test(digits)) return undefined;
  const national = digits.startsWith('254') ? digits.slice(3) : digits.startsWith('0') ? digits.slice(1) : digits;
  return /^[17]\d{8}$/.test(national) ? `254${national}` : undefined;
}

/** Daraja's Timestamp: YYYYMMDDHHmmss in East Africa Time (UTC+3, no daylight saving). */
export function darajaTimestamp(at: Date): string {
  const eat = new Date(at.getTime() + 3 * 3600_000);
  return eat.toISOString().replace(/[-:T]/g, '').slice(0, 14);
}

export function stkPassword(shortcode: string, passkey: string, timestamp: string): string {
  return Buffer.from(`${shortcode}${passkey}${timestamp}`).toString('base64');
}

function baseUrl(runtime: Runtime, credentials: MpesaCredentials): string {
  return runtime.config.rails.mpesaBaseUrls[credentials.environment];
}

/** A POST with the app's token; a token Daraja no longer takes (404.001.03) is fetched anew once. */
async function authorizedCall(
  runtime: Runtime,
  credentials: MpesaCredentials,
  path: string,
  body: Record<string, unknown>,
): Promise<{ status: number; body: Record<string, unknown> | null }> {
  for (let attempt = 0; ; attempt++) {
    const answer = await providerCall(
      'mpesa',
      `${baseUrl(runtime, credentials)}${path}`,
      { method: 'POST', headers: { authorization: `Bearer ${await accessToken(runtime, credentials)}` }, body },
      runtime.config.rails.timeoutMs,
    );
    if (answer.body?.errorCode !== '404.001.03' || attempt > 0) return answer;
    tokens.delete(tokenKey(runtime, credentials));
  }
}

function tokenKey(runtime: Runtime, credentials: MpesaCredentials): string {
  return `${baseUrl(runtime, credentials)}|${credentials.consumer_key}|${credentials.consumer_secret}`;
}

/** Daraja tokens live an hour; one per app is cached until a minute before it lapses. */
const tokens = new Map<string, { token: string; until: number }>();

async function accessToken(runtime: Runtime, credentials: MpesaCredentials): Promise<string> {
  const base = baseUrl(runtime, credentials);
  const cacheKey = tokenKey(runtime, credentials);
  const now = Date.now();
  const cached = tokens.get(cacheKey);
  if (cached && cached.until > now) return cached.token;
  const basic = Buffer.from(`${credentials.consumer_key}:${credentials.consumer_secret}`).toString('base64');
  const { status, body } = await providerCall(
    'mpesa',
    `${base}/oauth/v1/generate?grant_type=client_credentials`,
    { method: 'GET', headers: { authorization: `Basic ${basic}` } },
    runtime.config.rails.timeoutMs,
  );
  if (status !== 200 || typeof body?.access_token !== 'string') {
    throw new RailUnavailableError('mpesa', `M-Pesa refused the app's credentials: ${messageOf(body, status)}`, status);
  }
  const lifetime = Number(body.expires_in ?? 3599) * 1000;
  tokens.set(cacheKey, { token: body.access_token, until: now + Math.max(0, lifetime - 60_000) });
  return body.access_token;
}

function messageOf(body: Record<string, unknown> | null, status: number): string {
  const message = body?.errorMessage ?? body?.ResponseDescription ?? body?.error_description;
  return typeof message === 'string' ? `${message} (HTTP ${status})` : `HTTP ${status}`;
}

// ---------------------------------------------------------------------------------------------------
// Reconciliation listing (docs/reconciliation.md). Its own section, apart from the payer flow
// above: the daily reconciliation reads it, nothing in the payer flow does.
//
// Daraja's Pull Transactions API (developer.safaricom.co.ke/apis/PullTransaction) is the only
// Daraja API that lists what a shortcode received: "query all C2B transactions performed under
// their Pay bill/Till number within the last 48 hours". Transaction Status and Account Balance
// answer one transaction or a balance, asynchronously, and need an initiator credential plainpay
// does not hold. Pull needs a one-time registration of the shortcode by the operator (Register
// Pull, with the organisation's nominated number); plainpay only queries.

/** "Transactions can only be pulled within 48 hours" (the Pull page's FAQ). */
const PULL_RETENTION_MS = 48 * 3600_000;
/** A listing longer than this many pages is taken for paging that does not end. */
const PULL_MAX_PAGES = 1000;

mpesaRail.listCollected = async ({ runtime, credentials, from, to }) => {
  const oldest = runtime.clock.now().getTime() - PULL_RETENTION_MS;
  if (from.getTime() < oldest) {
    // Daraja would answer "no transactions" for it, which reads as if nothing was collected.
    throw new RailUnavailableError(
      'mpesa',
      `M-Pesa's Pull Transactions keeps 48 hours only; ${from.toISOString()} is older, so Daraja can no longer list it`,
    );
  }
  const collected: ProviderCollectedPayment[] = [];
  let offset = 0;
  for (let page = 0; page < PULL_MAX_PAGES; page++) {
    const { status, body } = await authorizedCall(runtime, credentials, '/pulltransactions/v1/query', {
      // "your paybill number/till number, which you expect to receive payments notifications about".
      ShortCode: credentials.party_b ?? credentials.shortcode,
      StartDate: pullDate(from),
      EndDate: pullDate(to),
      OffSetValue: String(offset),
    });
    // 1001: "No transactions available for the selected time period" (here: past the last page).
    if (status === 200 && body?.ResponseCode === '1001') return collected;
    if (status !== 200 || body?.ResponseCode !== '1000' || !Array.isArray(body.Response)) {
      throw new RailUnavailableError(
        'mpesa',
        `M-Pesa did not list transactions: ${pullMessageOf(body, status)}`,
        status,
      );
    }
    // The published answer nests the rows one level deeper: "Response": [[ {…}, {…} ]].
    const rows = (body.Response as unknown[]).flat();
    if (rows.length === 0) return collected;
    for (const row of rows) {
      const listed = pulledRow(row);
      if (listed.paidAt >= from && listed.paidAt < to) collected.push(listed);
    }
    // OffSetValue counts rows: "Suppose you wanted to show results 101-200 … type 100".
    offset += rows.length;
  }
  throw new RailUnavailableError('mpesa', `M-Pesa listed more than ${PULL_MAX_PAGES} pages of transactions`);
};

/**
 * One row of the listing. `transactionId` is the M-Pesa receipt (LHG31AA5TX in the page's
 * table), the same the STK callback calls MpesaReceiptNumber; `amount` a decimal of shillings.
 * A row plainpay cannot read fails the listing rather than drop money from the count.
 */
function pulledRow(row: unknown): ProviderCollectedPayment {
  const r = (row ?? {}) as Record<string, unknown>;
  const amount = typeof r.amount === 'number' ? r.amount.toFixed(2) : String(r.amount ?? '');
  const paidAt = pullInstant(String(r.trxDate ?? ''));
  const cents = /^(\d{1,12})(?:\.(\d{1,2}))?$/.exec(amount);
  if (typeof r.transactionId !== 'string' || !cents || paidAt === undefined) {
    throw new RailUnavailableError(
      'mpesa',
      `M-Pesa listed a transaction plainpay cannot read (${String(r.transactionId)})`,
    );
  }
  return {
    reference: r.transactionId,
    receipt: r.transactionId,
    amountMinor: BigInt(cents[1]!) * 100n + BigInt((cents[2] ?? '').padEnd(2, '0')),
    payerFeeMinor: 0n,
    currency: 'KES',
    paidAt,
  };
}

/**
 * StartDate/EndDate as the page writes them ("2019-07-31 20:35:21"), on Daraja's clock: East
 * Africa Time, as every Daraja timestamp (darajaTimestamp). The page does not name the zone.
 */
function pullDate(at: Date): string {
  const t = darajaTimestamp(at);
  return `${t.slice(0, 4)}-${t.slice(4, 6)}-${t.slice(6, 8)} ${t.slice(8, 10)}:${t.slice(10, 12)}:${t.slice(12, 14)}`;
}

/** trxDate: the sample's "2020-08-05T10:13:00Z" carries its zone; one without is read as EAT. */
function pullInstant(text: string): Date | undefined {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?$/.test(text)) return undefined;
  const at = new Date(/(Z|[+-]\d{2}:\d{2})$/.test(text) ? text : `${text}+03:00`);
  return Number.isNaN(at.getTime()) ? undefined : at;
}

/** Pull answers carry ResponseMessage (or Daraja's errorMessage on a gateway error). */
function pullMessageOf(body: Record<string, unknown> | null, status: number): string {
  const message = body?.ResponseMessage ?? body?.errorMessage;
  const code = body?.ResponseCode ?? body?.errorCode;
  return typeof message === 'string'
    ? `${message}${code ? ` (${String(code)})` : ''} (HTTP ${status})`
    : `HTTP ${status}`;
}
