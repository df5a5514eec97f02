/**
 * A local fake of Safaricom Daraja's M-Pesa Express (STK Push): OAuth, the push, the result
 * callback and the status query, on two listeners standing in for the sandbox
 * (https://sandbox.safaricom.co.ke) and production (https://api.safaricom.co.ke). Tests play the
 * payer through `phone`. It is a specification of Daraja (STYLE.md 15): every rule below names
 * where Safaricom (or, where Safaricom is silent, an integrator) published it, and the samples it
 * answers with are those of test/fakes/fixtures/daraja/, each naming its source.
 *
 * Safaricom's portal pages are read through the capture in github.com/JacksCodeVault/mpesa-daraja-mcp,
 * daraja_docs_v3/docs/*.md @ e875f3b350a0119c928c623c4e0cdd8999a5d329:
 *
 * OAuth (https://developer.safaricom.co.ke/apis/Authorization)
 *  1. GET /oauth/v1/generate?grant_type=client_credentials with Basic auth; 400.008.01 "Invalid
 *     authentication type passed" without Basic auth, 400.008.02 "Invalid grant type passed" for
 *     another grant_type. An app's credentials work in its own environment only (a sandbox app and
 *     a production app are separate apps). Unknown credentials: the page documents no answer; the
 *     fake answers HTTP 401 {errorCode "401.002.01", "Invalid Credentials"}.
 *  2. The token lives 3600 s ("Token Expiry"); `expires_in` is "3599", a string, as live answers
 *     send it (integrators; the page's sample has the number 3599, oauth.response.json).
 *  3. "Can I generate multiple tokens? Yes, but each request invalidates the previous token."
 *     (the page's FAQ 3): a new token of an app makes the app's earlier one invalid.
 *  4. A missing or non-Bearer Authorization is 404.001.04 "Invalid Authentication Header"
 *     (TransactionStatus page). An invalid, expired or replaced token is answered as the option
 *     `invalidToken` says, each shape documented on a Daraja page (errors.json): 404.001.03
 *     "Invalid Access Token" (HTTP 404, the M-Pesa Express page: the default), 401.002.01 "Error
 *     Occurred - Invalid Access Token - …" (HTTP 401, AccountBalance) or 400.003.01 "Invalid
 *     Access Token" (HTTP 400, CustomerToBusiness).
 *
 * The push (https://developer.safaricom.co.ke/apis/MpesaExpressSimulate)
 *  5. POST only (405.001 "Method Not Allowed"); other paths 404.001.01 "Resource not found". Errors
 *     are {requestId, errorCode, errorMessage} (the page's "Sample Error Response").
 *  6. Without Content-Type application/json the body is not read: "Bad Request - Invalid
 *     BusinessShortCode" (the page's FAQ 9).
 *  7. Every field but TransactionDesc is mandatory; BusinessShortCode 5 to 7 digits (the query page
 *     says 5 to 7), Timestamp YYYYMMDDHHmmss, TransactionType CustomerPayBillOnline or
 *     CustomerBuyGoodsOnline, Amount a whole number of shillings of at least 1 (a JSON number or a
 *     numeric string: the sample sends "1"), PartyA and PhoneNumber 2547XXXXXXXX (or 2541…),
 *     AccountReference at most 12 characters, TransactionDesc at most 13. A field that breaks its
 *     rule is 400.002.02 "Bad Request - Invalid <field>".
 *  8. Password = base64(Shortcode + Passkey + Timestamp): an unknown shortcode is 500.001.1001
 *     "Merchant does not exist", a wrong password "Wrong credentials" (both HTTP 500).
 *  9. CallBackURL, by Safaricom's URL rules (CustomerToBusinessRegisterURL, "URL Requirements";
 *     CustomerToBusiness FAQ 8): "Avoid using keywords such as M-PESA, M-Pesa, mpesa, Safaricom,
 *     exe, exec, cmd, sql, query, or any of their variants in either upper or lower cases in your
 *     URLs"; "All Production URLs must be HTTPS, on Sandbox you're allowed to simulate using HTTP";
 *     "Use publicly available (Internet-accessible) IP addresses or domain names" (enforced on
 *     production: the sandbox here calls back to the test's own loopback); public URL testers
 *     (ngrok, mockbin, requestbin) "are also usually blocked by the API". Any of these is
 *     400.002.02 "Bad Request - Invalid CallBackURL" (integrators report such callback URLs
 *     refused at the push: kenzobe.com/blog/mpesa-callback-urls, "HTTPS only. HTTP rejected.").
 * 10. A second push to a phone while one is open is 500.001.1001 "Unable to lock subscriber, a
 *     transaction is already in process for the current subscriber" (the page's error table).
 * 11. The acknowledgement is the page's "Response Body" (stkpush.response.json); CheckoutRequestID
 *     is ws_CO_ + DDMMYYYYHHmmssSSS (East Africa Time) + the phone without 254, as live IDs look.
 *
 * The result (the same page, "Callback Payload" and "Result codes")
 * 12. One callback per push, POSTed as JSON to its CallBackURL, unsigned, and never sent again
 *     whatever the receiver answers: Safaricom publishes no retry for STK callbacks, and tells
 *     integrators to reconcile "whether you received the callback or not" (RegisterURL page).
 * 13. ResultCode is a number in the callback ("0, 1032"), a string in the query (MpesaExpressQuery).
 *     Every code of the page's result table can be produced (phone.answer), with its description,
 *     plus the integrator-reported 1001, 26 and 9999 (result_codes.json, each row its source). The
 *     published callbacks write 1032 "Request cancelled by user" (the table adds a full stop), and
 *     that is what is sent.
 * 14. A success carries CallbackMetadata.Item: Amount as a decimal (the sample's 1.00),
 *     MpesaReceiptNumber, TransactionDate (a number, YYYYMMDDHHmmss) and PhoneNumber (a number). A
 *     failure carries no CallbackMetadata (the unsuccessful sample).
 * 15. Production callbacks also carry {"Name": "Balance"} with no Value, as live ones do
 *     (paidtag.com/docs/1.0/callback, an integrator; Safaricom lists Balance as optional).
 *
 * The query (https://developer.safaricom.co.ke/apis/MpesaExpressQuery)
 * 16. BusinessShortCode, Password, Timestamp and CheckoutRequestID, checked as for the push; an
 *     unknown CheckoutRequestID is 400.002.02 "Bad Request - Invalid CheckoutRequestID".
 * 17. While the prompt is open: HTTP 500 {errorCode "500.001.1001", errorMessage "The transaction
 *     is being processed"} (github.com/safaricom/LNMOnlineAndroidSample/issues/13, "the standard
 *     response from the Mpesa Express Query status API"). After it: ResponseCode "0" with the
 *     ResultCode (a string) and ResultDesc (stkpushquery.success.json).
 * 18. Production spells ResponseDescription "The service request has been accepted successsfully"
 *     (three s), as live answers do (paidtag.com/docs/1.0/callback); the sandbox as the page does.
 *
 * Daraja's gateway may also answer 500.003.02 (system busy, spike arrest), 500.003.03 (quota) or
 * 500.003.1001: DARAJA_ERRORS has their shapes, for the fault proxies of tests.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { AddressInfo } from 'node:net';

export type FakeEnvironment = 'sandbox' | 'production';

export interface FakeDarajaApp {
  consumerKey: string;
  consumerSecret: string;
  /** The shortcode the app pushes for, with its Lipa na M-Pesa passkey. */
  shortcode: string;
  passkey: string;
  /** Where the app lives (rule 1): the sandbox unless said. */
  environment?: FakeEnvironment;
}

export type InvalidTokenAnswer = 'invalid_access_token' | 'invalid_access_token_401' | 'invalid_access_token_400';

export interface FakeDarajaOptions {
  apps: FakeDarajaApp[];
  /**
   * Where a callback URL on a public host is really served in this test (the test plays DNS and
   * TLS): the URL to POST to instead, or undefined to POST to the URL as it is.
   */
  resolveCallback?: (url: URL) => string | undefined;
}

export interface FakePush {
  environment: FakeEnvironment;
  merchantRequestId: string;
  checkoutRequestId: string;
  shortcode: string;
  phone: string;
  amount: number;
  accountReference: string;
  transactionDesc: string;
  callbackUrl: string;
  /** Open on the phone, or completed with a ResultCode. */
  state: 'pending' | 'completed';
  resultCode: string | null;
  resultDesc: string | null;
  receipt: string | null;
  createdAt: Date;
  /** When the payer acted (or the prompt lapsed); null while pending. */
  settledAt: Date | null;
}

export interface FakeCallbackDelivery {
  url: string;
  body: string;
  status: number | 'error';
}

type PhoneAction = (checkoutRequestId: string, options?: { callback?: boolean }) => Promise<void>;

export interface FakeDaraja {
  /** Stands in for https://sandbox.safaricom.co.ke, no trailing slash. */
  baseUrl: string;
  /** Stands in for https://api.safaricom.co.ke, no trailing slash. */
  productionBaseUrl: string;
  pushes: ReadonlyMap<string, FakePush>; // by CheckoutRequestID
  callbacks: ReadonlyArray<FakeCallbackDelivery>;
  /** Tokens issued so far, per environment (rule 3 makes each new one replace the app's last). */
  tokensIssued: Readonly<Record<FakeEnvironment, number>>;
  /** Resolves with the next (or an already waiting, still pending) push sent to this phone (2547…); rejects after timeoutMs (default 20000). */
  waitForPush(phone: string, timeoutMs?: number): Promise<FakePush>;
  /**
   * What happens on the payer's phone; each completes the push and POSTs its one callback to its
   * CallBackURL (awaited, recorded, never thrown if the receiver is down), unless { callback: false }
   * (a callback Daraja never delivered; the query still tells the result).
   */
  phone: {
    accept: PhoneAction;
    cancel: PhoneAction;
    timeout: PhoneAction;
    insufficientFunds: PhoneAction;
    wrongPin: PhoneAction;
    /** Any code of the result table (DARAJA_RESULT_CODES): ends the push with it. */
    answer(checkoutRequestId: string, resultCode: string, options?: { callback?: boolean }): Promise<void>;
  };
  /** The exact callback body Daraja would send for a completed push (for tests that forge or replay callbacks). */
  callbackBody(checkoutRequestId: string): string;
  /** Expires every access token issued so far: the next API call is refused until a new token is fetched. */
  expireTokens(): void;
  /** Which documented answer an invalid or replaced token gets from now on (rule 4; 404.001.03 at first). */
  answerInvalidTokensWith(answer: InvalidTokenAnswer): void;
  close(): Promise<void>;
}

const FIXTURES = new URL('./fixtures/daraja/', import.meta.url);
const fixture = <T>(name: string): T => JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as T;

/** Safaricom's result table and the integrator-reported codes (rule 13), from result_codes.json. */
export const DARAJA_RESULT_CODES: ReadonlyArray<{ code: string; description: string; _source: string }> = fixture<{
  codes: Array<{ code: string; description: string; _source: string }>;
}>('result_codes.json').codes;

type DarajaErrorName =
  | 'invalid_field'
  | 'invalid_access_token'
  | 'invalid_access_token_401'
  | 'invalid_access_token_400'
  | 'invalid_authentication_header'
  | 'resource_not_found'
  | 'method_not_allowed'
  | 'merchant_does_not_exist'
  | 'wrong_credentials'
  | 'unable_to_lock_subscriber'
  | 'being_processed'
  | 'system_busy'
  | 'internal_server_error'
  | 'spike_arrest'
  | 'quota_violation'
  | 'invalid_authentication_type'
  | 'invalid_grant_type'
  | 'invalid_short_code';

/** Daraja's documented error answers (errors.json): status, errorCode, errorMessage. */
export const DARAJA_ERRORS: Readonly<
  Record<DarajaErrorName, { status: number; errorCode: string; errorMessage: string }>
> = fixture<{ errors: Record<DarajaErrorName, { status: number; errorCode: string; errorMessage: string }> }>(
  'errors.json',
).errors;

/** A documented error's body, as Daraja sends it (rule 5); `{field}` and `{token}` filled in. */
export function darajaErrorBody(name: DarajaErrorName, fill: Record<string, string> = {}): string {
  const { errorCode, errorMessage } = DARAJA_ERRORS[name];
  return JSON.stringify({
    requestId: gatewayId(7),
    errorCode,
    errorMessage: errorMessage.replace(/\{(\w+)\}/g, (_, key: string) => fill[key] ?? key),
  });
}

/** The Password Daraja expects: base64(shortcode + passkey + timestamp). */
export function stkPassword(shortcode: string, passkey: string, timestamp: string): string {
  return Buffer.from(shortcode + passkey + timestamp).toString('base64');
}

class DarajaError extends Error {
  constructor(
    readonly kind: DarajaErrorName,
    readonly fill: Record<string, string> = {},
  ) {
    super(kind);
  }
}
const invalid = (field: string) => new DarajaError('invalid_field', { field });

const TOKEN_LIFETIME_MS = 3599_000;
const PHONE = /^254[17]\d{8}$/;
const SHORTCODE = /^\d{5,7}$/;
const TRANSACTION_TYPES = new Set(['CustomerPayBillOnline', 'CustomerBuyGoodsOnline']);
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const ALNUM = `${UPPER}0123456789`;
/** Rule 9: the words, in either case, and M-Pesa with or without a separator. */
const REFUSED_WORDS = /m[\W_]*pesa|safaricom|exe|exec|cmd|sql|query/i;
/** Rule 9: public URL testers. */
const URL_TESTERS = /(^|\.)(ngrok(-free)?\.(io|app|dev)|mockbin\.(org|io)|requestb\.in|requestbin\.(com|net))$/i;
const QUERY_ACCEPTED: Record<FakeEnvironment, string> = {
  sandbox: fixture<{ ResponseDescription: string }>('stkpushquery.success.json').ResponseDescription,
  production: fixture<{ ResponseDescription: string }>('stkpushquery.cancelled_live.json').ResponseDescription,
};
/**
 * Rule 13: what the result is called where a published callback or query shows it (the cancelled
 * samples write "Request cancelled by user", the table "Request cancelled by user."); the table's
 * description for the rest.
 */
const SENT_DESCRIPTIONS: Record<string, string> = {
  '0': fixture<{ Body: { stkCallback: { ResultDesc: string } } }>('stk_callback.success.json').Body.stkCallback
    .ResultDesc,
  '1032': fixture<{ Body: { stkCallback: { ResultDesc: string } } }>('stk_callback.cancelled.json').Body.stkCallback
    .ResultDesc,
};
const PUSH_ACCEPTED = fixture<{ ResponseDescription: string; CustomerMessage: string }>('stkpush.response.json');

const pick = (alphabet: string, n: number) =>
  Array.from({ length: n }, () => alphabet[randomInt(alphabet.length)]).join('');
const hex = (n: number) => randomBytes(n).toString('hex').slice(0, n);
/** Shaped like the samples: "1c5b-4ba8-815c-ac45c57a3db01495926", "2654-4b64-97ff-b827b542881d3130". */
function gatewayId(digits: number): string {
  return `${hex(4)}-${hex(4)}-${hex(4)}-${hex(12)}${pick('0123456789', digits)}`;
}
/** Daraja's clocks run on East Africa Time (UTC+3, no DST): YYYYMMDDHHmmssSSS. */
const eat = (date: Date) => new Date(date.getTime() + 3 * 3600_000).toISOString().replace(/\D/g, '').slice(0, 17);
const text = (value: unknown) => (typeof value === 'string' ? value : typeof value === 'number' ? String(value) : '');

function validTimestamp(ts: string): boolean {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec(ts);
  if (!m) return false;
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  const date = new Date(Date.UTC(y!, mo! - 1, d!, h, mi, s));
  return date.getUTCMonth() === mo! - 1 && date.getUTCDate() === d && h! < 24 && mi! < 60 && s! < 60;
}

/** Rule 9. */
function acceptableCallbackUrl(value: string, environment: FakeEnvironment): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return false;
  if (REFUSED_WORDS.test(value)) return false;
  if (environment === 'sandbox') return true;
  return url.protocol === 'https:' && publicHost(url.hostname) && !URL_TESTERS.test(url.hostname);
}

/** An Internet name or address: not loopback, private, link-local, or a name only a LAN knows. */
function publicHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (isIP(host) === 4) {
    const [a, b] = host.split('.').map(Number) as [number, number];
    return !(
      a === 0 ||
      a === 10 ||
      a === 127 ||
      (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b < 32) ||
      (a === 192 && b === 168) ||
      (a === 100 && b >= 64 && b < 128)
    );
  }
  if (isIP(host) === 6) return !(host === '::1' || host === '::' || /^(fc|fd|fe8|fe9|fea|feb)/.test(host));
  return host.includes('.') && !/(^|\.)(localhost|local|internal|localdomain|lan|home\.arpa)$/.test(host);
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  // Rule 6.
  if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) throw invalid('BusinessShortCode');
  try {
    const body: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (body && typeof body === 'object' && !Array.isArray(body)) return body as Record<string, unknown>;
  } catch {}
  throw invalid('BusinessShortCode');
}

function send(res: ServerResponse, status: number, json: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
  res.end(json);
}

export async function startFakeDaraja(options: FakeDarajaOptions): Promise<FakeDaraja> {
  const apps = options.apps.map((app) => ({ ...app, environment: app.environment ?? 'sandbox' }));
  type App = (typeof apps)[number];
  const tokens = new Map<string, { app: App; expiresAt: number }>();
  /** Rule 3: each app's newest token; an older one is no longer valid. */
  const newestToken = new Map<App, string>();
  const tokensIssued: Record<FakeEnvironment, number> = { sandbox: 0, production: 0 };
  const pushes = new Map<string, FakePush>();
  const callbacks: FakeCallbackDelivery[] = [];
  const waiters = new Set<{ phone: string; resolve: (push: FakePush) => void; reject: (error: Error) => void }>();
  let invalidToken: InvalidTokenAnswer = 'invalid_access_token';

  function oauth(req: IncomingMessage, url: URL, environment: FakeEnvironment): string {
    const basic = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (!basic) throw new DarajaError('invalid_authentication_type');
    if (url.searchParams.get('grant_type') !== 'client_credentials') throw new DarajaError('invalid_grant_type');
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const [key, secret] = colon < 0 ? [decoded, ''] : [decoded.slice(0, colon), decoded.slice(colon + 1)];
    const app = apps.find((a) => a.consumerKey === key && a.consumerSecret === secret && a.environment === environment);
    if (!app) return '';
    const token = pick(`${UPPER.toLowerCase()}${ALNUM}`, 28);
    const previous = newestToken.get(app);
    if (previous) tokens.delete(previous);
    newestToken.set(app, token);
    tokens.set(token, { app, expiresAt: Date.now() + TOKEN_LIFETIME_MS });
    tokensIssued[environment] += 1;
    return JSON.stringify({ access_token: token, expires_in: '3599' });
  }

  function authenticate(req: IncomingMessage, environment: FakeEnvironment): void {
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (!bearer) throw new DarajaError('invalid_authentication_header');
    const token = tokens.get(bearer[1]!);
    if (!token || token.expiresAt <= Date.now() || token.app.environment !== environment) {
      throw new DarajaError(invalidToken, { token: bearer[1]!.slice(0, 28) });
    }
  }

  /** Rule 8: BusinessShortCode, Timestamp and Password, as both endpoints check them. */
  function merchant(body: Record<string, unknown>, environment: FakeEnvironment, validateRest: () => void): string {
    const shortcode = text(body.BusinessShortCode);
    if (!SHORTCODE.test(shortcode)) throw invalid('BusinessShortCode');
    const timestamp = text(body.Timestamp);
    if (!validTimestamp(timestamp)) throw invalid('Timestamp');
    validateRest();
    const app = apps.find((a) => a.shortcode === shortcode && a.environment === environment);
    if (!app) throw new DarajaError('merchant_does_not_exist');
    if (text(body.Password) !== stkPassword(shortcode, app.passkey, timestamp)) {
      throw new DarajaError('wrong_credentials');
    }
    return shortcode;
  }

  function stkPush(body: Record<string, unknown>, environment: FakeEnvironment): string {
    // Rule 7: a whole number of shillings, as a JSON number or a numeric string.
    const amountText = text(body.Amount).trim();
    const amount = /^\d+(\.0*)?$/.test(amountText) ? Number(amountText) : Number.NaN;
    const phone = text(body.PhoneNumber);
    const callbackUrl = text(body.CallBackURL);
    const accountReference = text(body.AccountReference);
    const transactionDesc = text(body.TransactionDesc);
    const shortcode = merchant(body, environment, () => {
      if (!TRANSACTION_TYPES.has(text(body.TransactionType))) throw invalid('TransactionType');
      if (!Number.isInteger(amount) || amount < 1) throw invalid('Amount');
      if (!PHONE.test(text(body.PartyA))) throw invalid('PartyA');
      if (!SHORTCODE.test(text(body.PartyB))) throw invalid('PartyB');
      if (!PHONE.test(phone)) throw invalid('PhoneNumber');
      if (!acceptableCallbackUrl(callbackUrl, environment)) throw invalid('CallBackURL');
      if (accountReference.length < 1 || accountReference.length > 12) throw invalid('AccountReference');
      if (transactionDesc.length > 13) throw invalid('TransactionDesc');
    });
    // Rule 10.
    if ([...pushes.values()].some((p) => p.phone === phone && p.state === 'pending')) {
      throw new DarajaError('unable_to_lock_subscriber');
    }
    const createdAt = new Date();
    const stamp = eat(createdAt);
    let checkoutRequestId = `ws_CO_${stamp.slice(6, 8)}${stamp.slice(4, 6)}${stamp.slice(0, 4)}${stamp.slice(8)}${phone.slice(3)}`;
    while (pushes.has(checkoutRequestId)) checkoutRequestId += pick('0123456789', 1);
    const push: FakePush = {
      environment,
      merchantRequestId: gatewayId(4),
      checkoutRequestId,
      shortcode,
      phone,
      amount,
      accountReference,
      transactionDesc,
      callbackUrl,
      state: 'pending',
      resultCode: null,
      resultDesc: null,
      receipt: null,
      createdAt,
      settledAt: null,
    };
    pushes.set(checkoutRequestId, push);
    for (const waiter of waiters) {
      if (waiter.phone === phone) {
        waiters.delete(waiter);
        waiter.resolve(push);
      }
    }
    // Rule 11.
    return JSON.stringify({
      MerchantRequestID: push.merchantRequestId,
      CheckoutRequestID: checkoutRequestId,
      ResponseCode: '0',
      ResponseDescription: PUSH_ACCEPTED.ResponseDescription,
      CustomerMessage: PUSH_ACCEPTED.CustomerMessage,
    });
  }

  function stkQuery(body: Record<string, unknown>, environment: FakeEnvironment): string {
    const id = text(body.CheckoutRequestID);
    const shortcode = merchant(body, environment, () => {
      if (!id) throw invalid('CheckoutRequestID');
    });
    // Rule 16.
    const push = pushes.get(id);
    if (!push || push.shortcode !== shortcode || push.environment !== environment) throw invalid('CheckoutRequestID');
    // Rule 17.
    if (push.state === 'pending') throw new DarajaError('being_processed');
    // Rules 13 and 18.
    return JSON.stringify({
      ResponseCode: '0',
      ResponseDescription: QUERY_ACCEPTED[environment],
      MerchantRequestID: push.merchantRequestId,
      CheckoutRequestID: push.checkoutRequestId,
      ResultCode: push.resultCode,
      ResultDesc: push.resultDesc,
    });
  }

  const routes: Record<string, (body: Record<string, unknown>, environment: FakeEnvironment) => string> = {
    '/mpesa/stkpush/v1/processrequest': stkPush,
    '/mpesa/stkpushquery/v1/query': stkQuery,
  };
  // Pull Transactions, which the daily reconciliation reads: its rules are in the section at the end of this file.
  for (const [path, route] of Object.entries(pullTransactionRoutes(options.apps, () => pushes.values()))) {
    routes[path] = (body) => JSON.stringify(route(body));
  }

  const handler = (environment: FakeEnvironment) => async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://daraja.invalid');
    try {
      if (url.pathname === '/oauth/v1/generate') {
        if (req.method !== 'GET') throw new DarajaError('method_not_allowed');
        const token = oauth(req, url, environment);
        if (!token) {
          return send(
            res,
            401,
            JSON.stringify({ requestId: gatewayId(7), errorCode: '401.002.01', errorMessage: 'Invalid Credentials' }),
          );
        }
        return send(res, 200, token);
      }
      const route = routes[url.pathname];
      if (!route) throw new DarajaError('resource_not_found');
      if (req.method !== 'POST') throw new DarajaError('method_not_allowed');
      authenticate(req, environment);
      send(res, 200, route(await readJson(req), environment));
    } catch (error) {
      const e = error instanceof DarajaError ? error : new DarajaError('internal_server_error');
      send(res, DARAJA_ERRORS[e.kind].status, darajaErrorBody(e.kind, e.fill));
    }
  };

  const listen = async (environment: FakeEnvironment) => {
    const server = createServer(handler(environment));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  };
  const sandbox = await listen('sandbox');
  const production = await listen('production');

  function find(checkoutRequestId: string): FakePush {
    const push = pushes.get(checkoutRequestId);
    if (!push) throw new Error(`fake Daraja: no STK push ${checkoutRequestId}`);
    return push;
  }

  function callbackBody(checkoutRequestId: string): string {
    const push = find(checkoutRequestId);
    if (push.state === 'pending') throw new Error(`fake Daraja: push ${checkoutRequestId} is still pending`);
    // Rule 13: a number in the callback (SFC_IC0003 is no number, and stays as it is).
    const code = /^\d+$/.test(push.resultCode!) ? Number(push.resultCode) : push.resultCode;
    const stkCallback: Record<string, unknown> = {
      MerchantRequestID: push.merchantRequestId,
      CheckoutRequestID: push.checkoutRequestId,
      ResultCode: code,
      ResultDesc: push.resultDesc,
    };
    if (code === 0) {
      // Rules 14 and 15.
      stkCallback.CallbackMetadata = {
        Item: [
          { Name: 'Amount', Value: push.amount },
          { Name: 'MpesaReceiptNumber', Value: push.receipt },
          ...(push.environment === 'production' ? [{ Name: 'Balance' }] : []),
          { Name: 'TransactionDate', Value: Number(eat(push.settledAt!).slice(0, 14)) },
          { Name: 'PhoneNumber', Value: Number(push.phone) },
        ],
      };
    }
    // JSON.stringify writes 150 where Daraja writes the decimal 150.00 (rule 14).
    return JSON.stringify({ Body: { stkCallback } }).replace(
      `{"Name":"Amount","Value":${push.amount}}`,
      `{"Name":"Amount","Value":${push.amount}.00}`,
    );
  }

  /** Rule 12: once, whatever the answer. */
  async function deliver(push: FakePush): Promise<void> {
    const body = callbackBody(push.checkoutRequestId);
    const target = options.resolveCallback?.(new URL(push.callbackUrl)) ?? push.callbackUrl;
    let status: number | 'error';
    try {
      const res = await fetch(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      await res.arrayBuffer().catch(() => undefined);
      status = res.status;
    } catch {
      status = 'error';
    }
    callbacks.push({ url: push.callbackUrl, body, status });
  }

  async function answer(checkoutRequestId: string, resultCode: string, opts?: { callback?: boolean }): Promise<void> {
    const push = find(checkoutRequestId);
    if (push.state !== 'pending') throw new Error(`fake Daraja: push ${checkoutRequestId} has already ended`);
    const result = DARAJA_RESULT_CODES.find((r) => r.code === resultCode);
    if (!result) throw new Error(`fake Daraja: ${resultCode} is not a result code Daraja documents`);
    push.state = 'completed';
    push.resultCode = result.code;
    push.resultDesc = SENT_DESCRIPTIONS[result.code] ?? result.description;
    push.settledAt = new Date();
    if (result.code === '0') push.receipt = pick(UPPER, 1) + pick(ALNUM, 9);
    if (opts?.callback !== false) await deliver(push);
  }

  const action =
    (resultCode: string): PhoneAction =>
    (checkoutRequestId, opts) =>
      answer(checkoutRequestId, resultCode, opts);

  return {
    baseUrl: sandbox.url,
    productionBaseUrl: production.url,
    pushes,
    callbacks,
    tokensIssued,
    waitForPush(phone, timeoutMs = 20_000) {
      const waiting = [...pushes.values()].find((p) => p.phone === phone && p.state === 'pending');
      if (waiting) return Promise.resolve(waiting);
      return new Promise((resolve, reject) => {
        const waiter = {
          phone,
          resolve: (push: FakePush) => {
            clearTimeout(timer);
            resolve(push);
          },
          reject: (error: Error) => {
            clearTimeout(timer);
            reject(error);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`fake Daraja: no STK push to ${phone} within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(waiter);
      });
    },
    phone: {
      accept: action('0'),
      cancel: action('1032'),
      timeout: action('1037'),
      insufficientFunds: action('1'),
      wrongPin: action('2001'),
      answer,
    },
    callbackBody,
    expireTokens() {
      for (const token of tokens.values()) token.expiresAt = 0;
    },
    answerInvalidTokensWith(answer) {
      invalidToken = answer;
    },
    async close() {
      for (const waiter of waiters) waiter.reject(new Error('fake Daraja closed'));
      waiters.clear();
      for (const { server } of [sandbox, production]) {
        server.closeAllConnections();
        await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Pull Transactions, which the daily reconciliation reads. Its own section. Shapes, codes and
// texts from https://developer.safaricom.co.ke/apis/PullTransaction (read via the capture in
// github.com/JacksCodeVault/mpesa-daraja-mcp daraja_docs_v3/docs/PullTransaction.md @ e875f3b)
// and the answer sample of Safaricom's Postman collection (documenter.getpostman.com/view/1724456/
// SVtTy8sd) as an integrator transcribed it (github.com/Ghostscypher/php-mpesa mpesa_endpoints.md
// @ f64cd2b; fixtures/daraja/pull_transactions_query.json).

/** "Transactions can only be pulled within 48 hours" (the page's FAQ). */
const PULL_RETENTION_MS = 48 * 3600_000;
/** The page does not say how many rows one answer holds; the fake's own choice. */
const PULL_PAGE_ROWS = 100;
/** "2019-07-31 20:35:21 / 2019-07-31 19:00"; the sample also sends "2020-08-04 8:36:00" and "10:10:000". */
const PULL_DATE = /^(\d{4})-(\d{2})-(\d{2}) (\d{1,2}):(\d{2})(?::(\d{2,3}))?$/;

/**
 * POST /pulltransactions/v1/register and /pulltransactions/v1/query (both POST, as the page's
 * environments table and samples use them, though its "Good to Know" says GET for the query).
 * - Register: ShortCode, RequestType "Pull", NominatedNumber, CallBackURL ("a valid secure URL":
 *   https only); 1000 "Shortcode Registered Successfully", 1001 "ShortCode already Registered".
 * - Query: only a registered shortcode ("Can I perform pull without registering? No"; how Daraja
 *   refuses is not published: the fake answers 400.001 "Invalid ShortCode", the page's code for a
 *   bad shortcode). StartDate/EndDate on Daraja's clock (EAT, as every Daraja timestamp; the page
 *   names no zone), OffSetValue a row offset ("results 101-200 … type 100"). Answers 1000
 *   "Success" with the rows nested one level deeper ("Response": [[…]]), or 1001 with none.
 * - A row per paid push of the shortcode, completed within the window and the last 48 hours:
 *   transactionId is the receipt, trxDate ISO in UTC with "Z" as the sample, amount a decimal
 *   string, transactiontype "c2b-pay-bill-debit" (the sample's; the fake keeps no till pushes
 *   apart), billreference the push's AccountReference. `sender` and `organizationname` hold the
 *   fake's own values.
 */
function pullTransactionRoutes(
  apps: FakeDarajaOptions['apps'],
  pushes: () => Iterable<FakePush>,
): Record<string, (body: Record<string, unknown>) => unknown> {
  const registered = new Set<string>();
  const refId = () => `${randomInt(10_000, 99_999)}-${randomInt(1_000_000, 99_999_999)}-1`;
  const invalidShortCode = () => new DarajaError('invalid_short_code');
  const eatDate = (field: string, value: unknown): number => {
    const m = PULL_DATE.exec(text(value));
    if (!m) throw invalid(field);
    const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
    return Date.UTC(y!, mo! - 1, d!, h! - 3, mi!, Math.min(s ?? 0, 59));
  };
  return {
    '/pulltransactions/v1/register': (body) => {
      const shortCode = text(body.ShortCode);
      if (!apps.some((a) => a.shortcode === shortCode)) throw invalidShortCode();
      if (text(body.RequestType) !== 'Pull') throw invalid('RequestType');
      if (!/^(07\d{8}|2547\d{8})$/.test(text(body.NominatedNumber))) throw invalid('NominatedNumber');
      if (!acceptableCallbackUrl(text(body.CallBackURL), 'production')) throw invalid('CallBackURL');
      const again = registered.has(shortCode);
      registered.add(shortCode);
      return {
        ResponseRefID: refId(),
        ResponseStatus: again ? '1001' : '1000',
        ShortCode: shortCode,
        ResponseDescription: again ? 'ShortCode already Registered' : 'Shortcode Registered Successfully',
      };
    },
    '/pulltransactions/v1/query': (body) => {
      const shortCode = text(body.ShortCode);
      if (!registered.has(shortCode)) throw invalidShortCode();
      const start = eatDate('StartDate', body.StartDate);
      const end = eatDate('EndDate', body.EndDate);
      const offset = Number(text(body.OffSetValue));
      if (!Number.isSafeInteger(offset) || offset < 0) throw invalid('OffSetValue');
      const kept = Date.now() - PULL_RETENTION_MS;
      const rows = [...pushes()]
        .filter((p) => p.shortcode === shortCode && p.state === 'completed' && p.resultCode === '0')
        .filter((p) => {
          const at = p.settledAt!.getTime();
          return at >= Math.max(start, kept) && at <= end;
        })
        .sort((a, b) => a.settledAt!.getTime() - b.settledAt!.getTime())
        .slice(offset, offset + PULL_PAGE_ROWS)
        .map((p) => ({
          transactionId: p.receipt,
          trxDate: `${p.settledAt!.toISOString().slice(0, 19)}Z`,
          msisdn: Number(p.phone),
          sender: p.phone,
          transactiontype: 'c2b-pay-bill-debit',
          billreference: p.accountReference,
          amount: p.amount.toFixed(2),
          organizationname: `Shortcode ${p.shortcode}`,
        }));
      if (rows.length === 0) {
        return {
          ResponseRefID: refId(),
          ResponseCode: '1001',
          ResponseMessage: 'No transactions found',
          Response: [[]],
        };
      }
      return { ResponseRefID: refId(), ResponseCode: '1000', ResponseMessage: 'Success', Response: [rows] };
    },
  };
}
