import { AppError } from '../../core/errors.ts';
import type { Db, PaymentRow } from '../../db/database.ts';
import type { RailServices } from '../deps.ts';
import type { ProviderOperation } from '../../metrics/metrics.ts';
import { listCollections, type MpesaCredentials } from './collections.ts';
import { checkWebhookUrl } from '../../webhooks/ssrf-guard.ts';
import {
  alertOperator,
  type ProviderRailAdapter,
  type ProviderVerdict,
  providerCall,
  RailUnavailableError,
} from './rail.ts';
import type { ProviderCollectedPayment } from './rail.ts';

/**
 * M-Pesa Express (STK Push) on Safaricom Daraja, as documented at
 * https://developer.safaricom.co.ke/APIs/MpesaExpressSimulate and …/MpesaExpressQuery: an OAuth
 * client-credentials token, a push with Password = base64(shortcode + passkey + timestamp), the
 * payer's PIN prompt on the phone, and a result callback that carries no signature. plainpay
 * trusts the callback only after the STK query API confirms it (docs/rails.md).
 */

/**
 * Where Daraja posts an STK push's result: `${PUBLIC_BASE_URL}/hooks/stk/<secret>`. No word
 * Safaricom tells integrators to keep out of callback URLs (callbackUrlProblem), and the secret is
 * hex, whose letters (a to f) cannot spell one.
 */
export const STK_CALLBACK_PATH = '/hooks/stk';

export function stkCallbackUrl(publicBaseUrl: string, secret: string): string {
  return `${publicBaseUrl}${STK_CALLBACK_PATH}/${secret}`;
}

/**
 * Safaricom's rules for the URLs Daraja calls, published with the URLs it registers
 * (https://developer.safaricom.co.ke/apis/CustomerToBusinessRegisterURL, "URL Requirements", and
 * the CustomerToBusiness FAQ 8); the STK callback goes through the same gateway, and integrators
 * report such callback URLs refused:
 *  - "Avoid using keywords such as M-PESA, M-Pesa, mpesa, Safaricom, exe, exec, cmd, sql, query,
 *    or any of their variants in either upper or lower cases in your URLs." (exec contains exe;
 *    the M-Pesa variants are the word with or without a separator.)
 *  - "All Production URLs must be HTTPS, on Sandbox you're allowed to simulate using HTTP."
 *  - "Use publicly available (Internet-accessible) IP addresses or domain names."
 *  - "Do not use public URL testers e.g. ngrok, mockbin, or requestbin, especially on production,
 *    they are also usually blocked by the API."
 * Returns why Daraja would refuse the URL in that environment, or undefined.
 */
export function callbackUrlProblem(url: string, environment: MpesaCredentials['environment']): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not an absolute URL';
  }
  const word = WORDS_DARAJA_REFUSES.exec(url)?.[0];
  if (word) return `contains "${word}", a word Safaricom tells integrators to keep out of callback URLs`;
  if (environment === 'sandbox') return undefined;
  if (parsed.protocol !== 'https:') return 'is not HTTPS: Daraja production calls back only on HTTPS';
  if (!checkWebhookUrl(url, { allowPrivate: false }).ok) {
    return `names ${parsed.hostname}, which is not a public address: Daraja production calls back only on the Internet`;
  }
  if (URL_TESTERS.test(parsed.hostname)) return `names ${parsed.hostname}, a public URL tester Daraja blocks`;
  return undefined;
}

/**
 * Why Daraja in this environment would refuse, or never deliver to, the callback URLs plainpay
 * builds on PUBLIC_BASE_URL: `plainpay collection set mpesa` refuses to collect while there is one.
 */
export function publicBaseUrlProblem(
  publicBaseUrl: string,
  environment: MpesaCredentials['environment'],
): string | undefined {
  const problem = callbackUrlProblem(stkCallbackUrl(publicBaseUrl, ''), environment);
  return problem && `PUBLIC_BASE_URL (${publicBaseUrl}): M-Pesa's callback URL ${problem}`;
}

/**
 * At start: the M-Pesa collection accounts whose callbacks Daraja would refuse on this
 * PUBLIC_BASE_URL (it changed since they were set, say). Each of their pushes is refused next to
 * the side effect (start); serve says so once, at start, as an error.
 */
export async function collectionsWithRefusedCallbacks(db: Db, publicBaseUrl: string): Promise<string[]> {
  const problems: string[] = [];
  for (const account of await listCollections(db, { owner: 'operator', active: true })) {
    if (account.rail !== 'mpesa') continue;
    const problem = publicBaseUrlProblem(
      publicBaseUrl,
      account.settings.environment as MpesaCredentials['environment'],
    );
    if (problem)
      problems.push(`${problem}: M-Pesa collection account ${account.id} cannot take payments until it is fixed`);
  }
  return problems;
}

const WORDS_DARAJA_REFUSES = /m[\W_]*pesa|safaricom|exe|cmd|sql|query/i;
const URL_TESTERS = /(^|\.)(ngrok(-free)?\.(io|app|dev)|mockbin\.(org|io)|requestb\.in|requestbin\.(com|net))$/i;

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
  payerNotice({ failure_reason }) {
    const reason = failure_reason ?? '';
    const code = RESULT_OF_REASON.exec(reason)?.[1];
    if (code !== undefined) return RESULT_CODES[code]?.payer;
    if (reason.startsWith(UNCONFIRMED)) return UNCONFIRMED_NOTICE;
    if (reason.endsWith(NOT_SENT)) return NOT_REACHED;
    // A push Daraja refused (start's messages): the same words as the result it amounts to.
    if (!reason.startsWith(PUSH_REFUSED)) return undefined;
    if (/unable to lock subscriber/i.test(reason)) return RESULT_CODES['1001']!.payer;
    if (/Invalid (PhoneNumber|PartyA)\b/.test(reason)) return PHONE_REFUSED;
    if (/Invalid Access Token/i.test(reason)) return RESULT_CODES['26']!.payer;
    return MERCHANT_NOT_SET_UP;
  },

  async start({ services, credentials, attempt, payment, payer, callbackUrl }) {
    // The guard next to the side effect: a push whose callback Daraja would refuse or never deliver
    // (a live payment's result sent over plain http, say) is not sent.
    const problem = callbackUrlProblem(callbackUrl, credentials.environment);
    if (problem) {
      alertOperator(
        services,
        'mpesa',
        {
          reason: 'configuration',
          message: `M-Pesa push not sent: its callback URL ${problem}; set PUBLIC_BASE_URL (docs/rails.md, "The callback URL")`,
        },
        { attemptId: attempt.id, environment: credentials.environment },
      );
      throw new RailUnavailableError(
        'mpesa',
        `M-Pesa is not set up to take payments here: the callback URL ${problem}`,
        undefined,
        true,
      );
    }
    const timestamp = darajaTimestamp(services.clock.now());
    const { status, body } = await authorizedCall(
      services,
      credentials,
      'stk_push',
      '/mpesa/stkpush/v1/processrequest',
      {
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
      },
    );
    if (status === 200 && body?.ResponseCode === '0' && typeof body.CheckoutRequestID === 'string') {
      return { providerReference: body.CheckoutRequestID };
    }
    const refusal = pushRefusal(status, body);
    if (!refusal) {
      // Lost in Daraja, a 5xx it documents as busy, a gateway's 502, 503 or 504: the prompt may
      // be on the phone all the same.
      throw new RailUnavailableError('mpesa', `M-Pesa did not confirm the push: ${messageOf(body, status)}`, status);
    }
    if (refusal === 'configuration') {
      alertOperator(
        services,
        'mpesa',
        {
          reason: 'configuration',
          message: `M-Pesa refused a push: ${messageOf(body, status)}; check the collection account (plainpay collection set mpesa)`,
        },
        { attemptId: attempt.id },
      );
    }
    throw new RailUnavailableError('mpesa', `${PUSH_REFUSED}${messageOf(body, status)}`, status, true);
  },

  async verify({ services, credentials, attempt }) {
    // The push's answer was lost: only its callback can name it; until then (and the give-up) it is open.
    if (!attempt.provider_reference) return { outcome: 'pending', detail: 'M-Pesa: the push was not acknowledged yet' };
    const timestamp = darajaTimestamp(services.clock.now());
    const { status, body } = await authorizedCall(services, credentials, 'stk_query', '/mpesa/stkpushquery/v1/query', {
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
      services,
      String(body.ResultCode),
      String(body.ResultDesc ?? ''),
      attempt.provider_reference,
      attempt.amount_minor,
    );
  },
};

/**
 * Why an attempt whose push Daraja never acknowledged was ended (reconcile.ts): it says the outcome
 * is unconfirmed, not that nothing was paid, and the payer is told so (payerNotice).
 */
export function unconfirmedPushReason(whyUnknown: string | null): string {
  return `${UNCONFIRMED}Daraja never acknowledged the push (${whyUnknown ?? 'no answer'}) and no callback named it within 5 minutes`;
}

const UNCONFIRMED = 'unconfirmed: ';
const UNCONFIRMED_NOTICE =
  'We could not confirm with M-Pesa whether this request reached your phone. If M-Pesa sent you a payment confirmation, do not pay again: contact the merchant. Otherwise you can try again.';

/** The start of the reason of a push Daraja refused, and the end of one never sent (no token): no prompt went out. */
const PUSH_REFUSED = 'M-Pesa refused the push: ';
const NOT_SENT = '; nothing was sent';
const NOT_REACHED = 'M-Pesa could not be reached. No money was taken. Please try again in a minute.';
const PHONE_REFUSED =
  'M-Pesa did not take this phone number. No money was taken. Check it is your M-Pesa number, then try again.';

/** What the payer reads when M-Pesa could not show the prompt, or the merchant's M-Pesa is set up wrong. */
const PROMPT_NOT_SHOWN =
  'M-Pesa could not show this request on your phone. No money was taken. Try again in a minute, or pay another way.';
const MERCHANT_NOT_SET_UP =
  'M-Pesa is not set up correctly for this merchant. No money was taken. Please pay another way.';

/**
 * Daraja's result codes: how the attempt ends, what the payer is told (something they can act on),
 * and whether the operator must act. The published table is the M-Pesa Express page's "Result
 * codes" (https://developer.safaricom.co.ke/apis/MpesaExpressSimulate); 1001, 26 and 9999 are
 * reported by integrators (paylod.dev/docs/errors). Each is a test row
 * (test/rails.mpesa.test.ts, over test/fakes/fixtures/daraja/result_codes.json).
 */
const RESULT_CODES: Readonly<Record<string, ResultCodeRule>> = {
  // "The balance is insufficient for the transaction."
  '1': declined('Your M-Pesa balance was not enough for this payment. No money was taken. Top up, then try again.'),
  // "Declined due to limit rule": below the C2B minimum (Ksh 1); takes() offers nothing below it.
  '2': declined('M-Pesa refused this amount as below its minimum. No money was taken. Please pay another way.'),
  // "… greater than the maximum transaction amount."
  '3': declined('This amount is above what M-Pesa allows in one payment. No money was taken. Please pay another way.'),
  // "… would exceed daily transfer limit." (Ksh 500,000 a day)
  '4': declined(
    'This payment would take you over your daily M-Pesa limit. No money was taken. Pay another way, or try again tomorrow.',
  ),
  // "… would exceed the maximum balance": the Pay Bill or Till Number's balance limit, the operator's account.
  '8': declined(
    "The merchant's M-Pesa account cannot take this payment right now. No money was taken. Please pay another way.",
    {
      reason: 'collection_limit',
      message:
        "M-Pesa result 8: the collection account's paybill or till has reached its balance limit; move funds out of it",
    },
  ),
  // "Rule limited": the same amount to the same customer within 2 minutes.
  '17': declined(
    'M-Pesa holds back the same amount twice within 2 minutes. No money was taken. Wait 2 minutes, then try again.',
  ),
  // "Transaction has expired": "not processed within the allowable time".
  '1019': {
    outcome: 'timed_out',
    payer: 'The M-Pesa request expired before it was answered. No money was taken. You can try again.',
  },
  // "An error occurred while sending a push request": the prompt is over 182 characters.
  '1025': declined(PROMPT_NOT_SHOWN, {
    reason: 'configuration',
    message:
      "M-Pesa result 1025: the prompt was too long to show on the phone; shorten the paybill's name or the payments' references",
  }),
  // "Request cancelled by user."
  '1032': {
    outcome: 'cancelled',
    payer: 'The M-Pesa request was cancelled on your phone. No money was taken. You can try again.',
  },
  // "DS timeout user cannot be reached": phone offline, busy, or in another session.
  '1037': {
    outcome: 'timed_out',
    payer:
      'Your phone could not be reached in time. No money was taken. Check it is on and has signal, close any other M-Pesa request, then try again.',
  },
  // "The initiator information is invalid": the payer's PIN was wrong.
  '2001': declined('The M-Pesa PIN was wrong. No money was taken. Try again, with your M-Pesa PIN.'),
  // "The request is not permitted according to product assignment": TransactionType or PartyB wrong.
  '2028': declined(MERCHANT_NOT_SET_UP, {
    reason: 'configuration',
    message:
      "M-Pesa result 2028: the push is not permitted for the shortcode's product; the collection account's transaction_type or party_b is wrong",
  }),
  // "The security credential is locked": the payer's M-Pesa PIN.
  '8006': declined(
    'Your M-Pesa PIN is locked. No money was taken. Call Safaricom on 100 or 200 to unlock it, then try again.',
  ),
  // "The operator does not exist": TransactionType or PartyB wrong.
  SFC_IC0003: declined(MERCHANT_NOT_SET_UP, {
    reason: 'configuration',
    message:
      "M-Pesa result SFC_IC0003: the operator does not exist; the collection account's transaction_type or party_b is wrong",
  }),
  // Integrators: "Unable to lock subscriber": another USSD or M-Pesa session is open on the phone.
  '1001': {
    outcome: 'failed',
    payer:
      'Another M-Pesa request is open on your phone. No money was taken. Finish or cancel it, wait a minute, then try again.',
  },
  // Integrators: "System busy".
  '26': { outcome: 'failed', payer: 'M-Pesa is busy. No money was taken. Please try again in a minute.' },
  // Integrators: "Error sending push (request character limit)", like 1025.
  '9999': declined(PROMPT_NOT_SHOWN, {
    reason: 'configuration',
    message:
      "M-Pesa result 9999: the push could not be sent (request character limit); shorten the paybill's name or the payments' references",
  }),
};

interface ResultCodeRule {
  outcome: Exclude<ProviderVerdict['outcome'], 'pending' | 'succeeded' | 'abandoned'>;
  payer: string;
  operator?: ProviderVerdict['operatorAlert'];
}

function declined(payer: string, operator?: ProviderVerdict['operatorAlert']): ResultCodeRule {
  return { outcome: 'declined', payer, ...(operator && { operator }) };
}

/**
 * Daraja's answer as an outcome. "0 means success; any other code means error or failure" (the
 * callback's parameter table): a code plainpay does not know yet is a decline, and logged. A
 * success confirms what the push asked: M-Pesa charges the pushed Amount, which the query does not
 * repeat; the callback's Amount is checked against it too.
 */
function verdictOf(
  services: RailServices,
  resultCode: string,
  resultDesc: string,
  reference: string,
  amountMinor: bigint | null,
): ProviderVerdict {
  const detail = `${RESULT_PREFIX}${resultCode}: ${resultDesc}`;
  if (resultCode === '0') {
    return {
      outcome: 'succeeded',
      detail,
      confirmed: { amount_minor: String(amountMinor), currency: 'KES', reference },
    };
  }
  const rule = RESULT_CODES[resultCode];
  if (!rule) {
    services.logger.warn(
      { resultCode, resultDesc },
      'M-Pesa answered a result code plainpay does not know: read as a decline',
    );
    return { outcome: 'declined', detail };
  }
  return {
    outcome: rule.outcome as ProviderVerdict['outcome'],
    detail,
    ...(rule.operator && { operatorAlert: rule.operator }),
  };
}

/** An ended attempt's failure_reason starts with this and its result code (verdictOf's detail). */
const RESULT_PREFIX = 'M-Pesa ';
const RESULT_OF_REASON = /^M-Pesa ([A-Za-z0-9_]+): /;

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

function baseUrl(services: RailServices, credentials: MpesaCredentials): string {
  return services.config.rails.mpesaBaseUrls[credentials.environment];
}

/**
 * Daraja's answers to a token it no longer takes, each documented on one of its pages: 404.001.03
 * (M-Pesa Express), 401.002.01 (Account Balance), 400.003.01 (Customer to Business, Transaction
 * Status). A token lapses after an hour, and "each request invalidates the previous token" (the
 * Authorization page's FAQ 3): another process of this instance that fetched one for the same
 * Daraja app has made this process's token invalid.
 */
const TOKEN_REFUSALS = new Set(['404.001.03', '401.002.01', '400.003.01']);

/**
 * A POST with the app's token. A token Daraja refuses is replaced and the call made once more: one
 * retry, never a loop, so processes that keep replacing each other's tokens cost a call each, not
 * a push. A second refusal is Daraja's answer (the push was not made).
 */
async function authorizedCall(
  services: RailServices,
  credentials: MpesaCredentials,
  operation: ProviderOperation<'mpesa'>,
  path: string,
  body: Record<string, unknown>,
): Promise<{ status: number; body: Record<string, unknown> | null }> {
  for (let attempt = 0; ; attempt++) {
    let token: string;
    try {
      token = await accessToken(services, credentials);
    } catch (error) {
      // Before the call: without a token nothing was sent.
      const cause = error as Error;
      throw new RailUnavailableError(
        'mpesa',
        `${cause.message}${NOT_SENT}`,
        error instanceof RailUnavailableError ? error.providerStatus : undefined,
        true,
      );
    }
    const answer = await providerCall(
      'mpesa',
      operation,
      `${baseUrl(services, credentials)}${path}`,
      { method: 'POST', headers: { authorization: `Bearer ${token}` }, body },
      services.config.rails.timeoutMs,
    );
    if (attempt > 0 || !TOKEN_REFUSALS.has(String(answer.body?.errorCode))) return answer;
    forgetToken(services, credentials, token);
  }
}

interface CachedToken {
  /** The token, or its fetch under way: one fetch per app at a time, since a second would invalidate the first. */
  token: Promise<string>;
  /** The token once fetched. */
  value?: string;
  until: number;
}

/**
 * Daraja tokens live an hour; one per app is kept until a minute before it lapses, per rail
 * services object: the runtime a composition root hands in, so per process (each process of an
 * instance keeps its own, and replaces it when another's has made it invalid).
 */
const tokenCaches = new WeakMap<RailServices, Map<string, CachedToken>>();

function tokensOf(services: RailServices): Map<string, CachedToken> {
  let cache = tokenCaches.get(services);
  if (!cache) {
    cache = new Map();
    tokenCaches.set(services, cache);
  }
  return cache;
}

function tokenKey(services: RailServices, credentials: MpesaCredentials): string {
  return `${baseUrl(services, credentials)}|${credentials.consumer_key}|${credentials.consumer_secret}`;
}

/** Drops the token Daraja refused, unless a call beside this one has already replaced it. */
function forgetToken(services: RailServices, credentials: MpesaCredentials, refused: string): void {
  const cache = tokensOf(services);
  const key = tokenKey(services, credentials);
  if (cache.get(key)?.value === refused) cache.delete(key);
}

function accessToken(services: RailServices, credentials: MpesaCredentials): Promise<string> {
  const cache = tokensOf(services);
  const key = tokenKey(services, credentials);
  const cached = cache.get(key);
  if (cached && cached.until > Date.now()) return cached.token;
  const entry: CachedToken = {
    token: fetchToken(services, credentials).then(
      ({ token, lifetimeMs }) => {
        entry.value = token;
        entry.until = Date.now() + lifetimeMs - 60_000;
        return token;
      },
      (error: unknown) => {
        if (cache.get(key) === entry) cache.delete(key);
        throw error;
      },
    ),
    // Taken by every call until it settles.
    until: Number.POSITIVE_INFINITY,
  };
  cache.set(key, entry);
  return entry.token;
}

/** A new token, and how long it lives: expires_in ("3599", a string, live), else the documented hour. */
async function fetchToken(
  services: RailServices,
  credentials: MpesaCredentials,
): Promise<{ token: string; lifetimeMs: number }> {
  const basic = Buffer.from(`${credentials.consumer_key}:${credentials.consumer_secret}`).toString('base64');
  const { status, body } = await providerCall(
    'mpesa',
    'oauth_token',
    `${baseUrl(services, credentials)}/oauth/v1/generate?grant_type=client_credentials`,
    { method: 'GET', headers: { authorization: `Basic ${basic}` } },
    services.config.rails.timeoutMs,
  );
  if (status !== 200 || typeof body?.access_token !== 'string') {
    const message = `M-Pesa refused the app's credentials: ${messageOf(body, status)}`;
    // Daraja's own "no" to the consumer key and secret: nothing works until the operator fixes them.
    if (status >= 400 && status < 500) {
      alertOperator(
        services,
        'mpesa',
        { reason: 'configuration', message: `${message}; check the collection account` },
        {},
      );
    }
    throw new RailUnavailableError('mpesa', message, status);
  }
  const seconds = Number(body.expires_in ?? 3599);
  return { token: body.access_token, lifetimeMs: (Number.isFinite(seconds) ? seconds : 3599) * 1000 };
}

/**
 * Whether Daraja clearly refused a push, so that no prompt went to the phone, and whose doing it
 * is: the operator's (`configuration`: alerted) or nobody's to fix (`refused`: the payer can try
 * again). undefined: not a refusal, the push may have been made. Daraja's error table
 * (https://developer.safaricom.co.ke/apis/MpesaExpressSimulate, "Common Error Codes"):
 *  - 400.002.02 "Bad Request - Invalid <field>", 404.001.01, 404.001.04, 405.001, and the token
 *    refusals: the request was not taken;
 *  - 500.001.1001 "Merchant does not exist" or "Wrong credentials": the shortcode or passkey;
 *  - 500.001.1001 "Unable to lock subscriber, a transaction is already in process for the current
 *    subscriber": another prompt is on the phone ("Wait at least 1 minute between requests");
 *  - a 200 whose ResponseCode is not "0" ("any other code indicates an error").
 * Every other 5xx (500.003.02 "System is busy" or "Spike Arrest Violation", 500.003.03 "Quota
 * Violation", 500.003.1001, a gateway's 502, 503, 504), a 429 and an answer that is not Daraja's
 * JSON say nothing of whether the push went out.
 */
function pushRefusal(status: number, body: Record<string, unknown> | null): 'configuration' | 'refused' | undefined {
  const code = typeof body?.errorCode === 'string' ? body.errorCode : undefined;
  const message = typeof body?.errorMessage === 'string' ? body.errorMessage : '';
  if (status === 200) return typeof body?.ResponseCode === 'string' ? 'refused' : undefined;
  if (code === undefined) return undefined;
  if (TOKEN_REFUSALS.has(code)) return 'refused';
  if (code === '500.001.1001') {
    if (/unable to lock subscriber/i.test(message)) return 'refused';
    return /merchant does not exist|wrong credentials/i.test(message) ? 'configuration' : undefined;
  }
  if (code === '400.002.02' && /Invalid (PhoneNumber|PartyA)\b/.test(message)) return 'refused';
  return status >= 400 && status < 500 && /^4\d\d\./.test(code) ? 'configuration' : undefined;
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

mpesaRail.listCollected = async ({ services, credentials, from, to }) => {
  const oldest = services.clock.now().getTime() - PULL_RETENTION_MS;
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
    const { status, body } = await authorizedCall(
      services,
      credentials,
      'pull_transactions',
      '/pulltransactions/v1/query',
      {
        // "your paybill number/till number, which you expect to receive payments notifications about".
        ShortCode: credentials.party_b ?? credentials.shortcode,
        StartDate: pullDate(from),
        EndDate: pullDate(to),
        OffSetValue: String(offset),
      },
    );
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
