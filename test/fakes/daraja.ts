/**
 * A local fake of Safaricom Daraja's M-Pesa Express (STK Push) API: OAuth, the push, the result
 * callback and the status query. It stands in for https://sandbox.safaricom.co.ke. Tests play the
 * payer through `phone`.
 *
 * Shapes, codes and texts come from Safaricom's portal pages (read via the capture in
 * github.com/JacksCodeVault/mpesa-daraja-mcp, daraja_docs_v3/docs/*.md):
 *  - https://developer.safaricom.co.ke/apis/Authorization: GET /oauth/v1/generate, Basic auth,
 *    errors 400.008.01 (authorization type) and 400.008.02 (grant type).
 *  - https://developer.safaricom.co.ke/apis/MpesaExpressSimulate: the request fields and limits,
 *    the acknowledgement, both callback samples, the error table (400.002.02 "Bad Request - Invalid
 *    XXXX", 404.001.03, 404.001.01, 405.001, 500.001.1001 "Merchant does not exist" / "Wrong
 *    credentials" / "Unable to lock subscriber, a transaction is already in process for the current
 *    subscriber"), the result codes table (the ResultDesc texts used below) and the FAQ (a missing
 *    Content-Type gives "Bad Request - Invalid BusinessShortCode").
 *  - https://developer.safaricom.co.ke/apis/MpesaExpressQuery: the query request and response,
 *    where ResultCode is a string (it is a number in the callback).
 * The pages don't document everything. These parts follow what public clients and their tests
 * show the live API returning: `expires_in` is the string "3599"; a query made while the prompt is
 * still open gets HTTP 500 {errorCode "500.001.1001", errorMessage "The transaction is being
 * processed"}; a missing or non-Bearer header gets 404.001.04 "Invalid Authentication Header"
 * (documented on Daraja's other API pages); CheckoutRequestID is ws_CO_ + DDMMYYYYHHmmssSSS (EAT)
 * + the phone without 254.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeDarajaOptions {
  /** Daraja apps the fake knows: consumer key/secret, and the shortcode with its Lipa na M-Pesa passkey. */
  apps: Array<{ consumerKey: string; consumerSecret: string; shortcode: string; passkey: string }>;
}
export type FakePushState = 'pending' | 'paid' | 'cancelled' | 'timeout' | 'insufficient_funds' | 'wrong_pin';
export interface FakePush {
  merchantRequestId: string;
  checkoutRequestId: string;
  shortcode: string;
  phone: string;
  amount: number;
  accountReference: string;
  transactionDesc: string;
  callbackUrl: string;
  state: FakePushState;
  resultCode: number | null;
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
  baseUrl: string; // stands in for https://sandbox.safaricom.co.ke, no trailing slash
  pushes: ReadonlyMap<string, FakePush>; // by CheckoutRequestID
  callbacks: ReadonlyArray<FakeCallbackDelivery>;
  /** Resolves with the next (or an already waiting, still pending) push sent to this phone (2547…); rejects after timeoutMs (default 20000). */
  waitForPush(phone: string, timeoutMs?: number): Promise<FakePush>;
  /** What the payer does on the phone; each settles the push and POSTs the result callback to its CallBackURL (awaited, recorded, never throws if the receiver is down) unless { callback: false } (a callback Safaricom never delivered; the query API still tells the result). */
  phone: {
    accept: PhoneAction;
    cancel: PhoneAction;
    timeout: PhoneAction;
    insufficientFunds: PhoneAction;
    wrongPin: PhoneAction;
  };
  /** The exact callback body Daraja would send for a push in its current state (for tests that forge or replay callbacks). */
  callbackBody(checkoutRequestId: string): string;
  /** Expires every access token issued so far: the next API call answers 404.001.03 until a new token is fetched. */
  expireTokens(): void;
  close(): Promise<void>;
}

/** The Password Daraja expects: base64(shortcode + passkey + timestamp). */
export function stkPassword(shortcode: string, passkey: string, timestamp: string): string {
  return Buffer.from(shortcode + passkey + timestamp).toString('base64');
}

/** The result codes table of the M-Pesa Express page, with its descriptions. */
export const DARAJA_RESULTS = {
  paid: { code: 0, desc: 'The service request is processed successfully.' },
  insufficient_funds: { code: 1, desc: 'The balance is insufficient for the transaction.' },
  cancelled: { code: 1032, desc: 'Request cancelled by user.' },
  timeout: { code: 1037, desc: 'DS timeout user cannot be reached.' },
  wrong_pin: { code: 2001, desc: 'The initiator information is invalid.' },
} as const satisfies Record<Exclude<FakePushState, 'pending'>, { code: number; desc: string }>;

type App = FakeDarajaOptions['apps'][number];
type Body = Record<string, unknown>;

class DarajaError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
const invalid = (field: string) => new DarajaError(400, '400.002.02', `Bad Request - Invalid ${field}`);

const TOKEN_LIFETIME_MS = 3599_000;
const PHONE = /^254[17]\d{8}$/;
const SHORTCODE = /^\d{5,7}$/;
const TRANSACTION_TYPES = new Set(['CustomerPayBillOnline', 'CustomerBuyGoodsOnline']);
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const ALNUM = `${UPPER}0123456789`;

const pick = (alphabet: string, n: number) =>
  Array.from({ length: n }, () => alphabet[randomInt(alphabet.length)]).join('');
const hex = (n: number) => randomBytes(n).toString('hex').slice(0, n);
/** Shaped like the samples: "1c5b-4ba8-815c-ac45c57a3db01495926", "2654-4b64-97ff-b827b542881d3130". */
const gatewayId = (digits: number) => `${hex(4)}-${hex(4)}-${hex(4)}-${hex(12)}${pick('0123456789', digits)}`;
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

function validUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

async function readJson(req: IncomingMessage): Promise<Body> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  // The portal FAQ: without Content-Type application/json the body is not read, and the first field fails.
  if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) throw invalid('BusinessShortCode');
  try {
    const body: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (body && typeof body === 'object' && !Array.isArray(body)) return body as Body;
  } catch {}
  throw invalid('BusinessShortCode');
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
  res.end(json);
}

export async function startFakeDaraja(options: FakeDarajaOptions): Promise<FakeDaraja> {
  const tokens = new Map<string, { app: App; expiresAt: number }>();
  const pushes = new Map<string, FakePush>();
  const callbacks: FakeCallbackDelivery[] = [];
  const waiters = new Set<{ phone: string; resolve: (push: FakePush) => void; reject: (error: Error) => void }>();

  function oauth(req: IncomingMessage, url: URL) {
    const basic = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (!basic) throw new DarajaError(400, '400.008.01', 'Invalid authentication type passed');
    if (url.searchParams.get('grant_type') !== 'client_credentials') {
      throw new DarajaError(400, '400.008.02', 'Invalid grant type passed');
    }
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const [key, secret] = colon < 0 ? [decoded, ''] : [decoded.slice(0, colon), decoded.slice(colon + 1)];
    const app = options.apps.find((a) => a.consumerKey === key && a.consumerSecret === secret);
    if (!app) throw new DarajaError(401, '401.002.01', 'Invalid Credentials');
    const token = pick(`${UPPER.toLowerCase()}${ALNUM}`, 28);
    tokens.set(token, { app, expiresAt: Date.now() + TOKEN_LIFETIME_MS });
    return { access_token: token, expires_in: '3599' };
  }

  function authenticate(req: IncomingMessage): void {
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (!bearer) throw new DarajaError(404, '404.001.04', 'Invalid Authentication Header');
    const token = tokens.get(bearer[1]!);
    if (!token || token.expiresAt <= Date.now()) throw new DarajaError(404, '404.001.03', 'Invalid Access Token');
  }

  /** BusinessShortCode, Timestamp and Password, as both endpoints check them. */
  function merchant(body: Body, validateRest: () => void): { shortcode: string } {
    const shortcode = text(body.BusinessShortCode);
    if (!SHORTCODE.test(shortcode)) throw invalid('BusinessShortCode');
    const timestamp = text(body.Timestamp);
    if (!validTimestamp(timestamp)) throw invalid('Timestamp');
    validateRest();
    const app = options.apps.find((a) => a.shortcode === shortcode);
    if (!app) throw new DarajaError(500, '500.001.1001', 'Merchant does not exist');
    if (text(body.Password) !== stkPassword(shortcode, app.passkey, timestamp)) {
      throw new DarajaError(500, '500.001.1001', 'Wrong credentials');
    }
    return { shortcode };
  }

  function stkPush(body: Body) {
    // A whole number of shillings, as a JSON number or a numeric string (the samples send "1").
    const amountText = text(body.Amount).trim();
    const amount = /^\d+(\.0*)?$/.test(amountText) ? Number(amountText) : Number.NaN;
    const phone = text(body.PhoneNumber);
    const callbackUrl = text(body.CallBackURL);
    const accountReference = text(body.AccountReference);
    const transactionDesc = text(body.TransactionDesc);
    const { shortcode } = merchant(body, () => {
      if (!TRANSACTION_TYPES.has(text(body.TransactionType))) throw invalid('TransactionType');
      if (!Number.isInteger(amount) || amount < 1) throw invalid('Amount');
      if (!PHONE.test(text(body.PartyA))) throw invalid('PartyA');
      if (!SHORTCODE.test(text(body.PartyB))) throw invalid('PartyB');
      if (!PHONE.test(phone)) throw invalid('PhoneNumber');
      if (!validUrl(callbackUrl)) throw invalid('CallBackURL');
      if (accountReference.length < 1 || accountReference.length > 12) throw invalid('AccountReference');
      if (transactionDesc.length > 13) throw invalid('TransactionDesc');
    });
    if ([...pushes.values()].some((p) => p.phone === phone && p.state === 'pending')) {
      throw new DarajaError(
        500,
        '500.001.1001',
        'Unable to lock subscriber, a transaction is already in process for the current subscriber',
      );
    }
    const createdAt = new Date();
    const stamp = eat(createdAt);
    let checkoutRequestId = `ws_CO_${stamp.slice(6, 8)}${stamp.slice(4, 6)}${stamp.slice(0, 4)}${stamp.slice(8)}${phone.slice(3)}`;
    while (pushes.has(checkoutRequestId)) checkoutRequestId += pick('0123456789', 1);
    const push: FakePush = {
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
    return {
      MerchantRequestID: push.merchantRequestId,
      CheckoutRequestID: checkoutRequestId,
      ResponseCode: '0',
      ResponseDescription: 'Success. Request accepted for processing',
      CustomerMessage: 'Success. Request accepted for processing',
    };
  }

  function stkQuery(body: Body) {
    const id = text(body.CheckoutRequestID);
    const { shortcode } = merchant(body, () => {
      if (!id) throw invalid('CheckoutRequestID');
    });
    const push = pushes.get(id);
    if (!push || push.shortcode !== shortcode) throw invalid('CheckoutRequestID');
    if (push.state === 'pending') throw new DarajaError(500, '500.001.1001', 'The transaction is being processed');
    return {
      ResponseCode: '0',
      ResponseDescription: 'The service request has been accepted successfully',
      MerchantRequestID: push.merchantRequestId,
      CheckoutRequestID: push.checkoutRequestId,
      ResultCode: String(push.resultCode),
      ResultDesc: push.resultDesc,
    };
  }

  const routes: Record<string, (body: Body) => unknown> = {
    '/mpesa/stkpush/v1/processrequest': stkPush,
    '/mpesa/stkpushquery/v1/query': stkQuery,
  };
  // Pull Transactions, which the daily reconciliation reads: its rules are in the section at the end of this file.
  Object.assign(
    routes,
    pullTransactionRoutes(options.apps, () => pushes.values()),
  );

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://daraja.invalid');
    try {
      if (url.pathname === '/oauth/v1/generate') {
        if (req.method !== 'GET') throw new DarajaError(405, '405.001', 'Method Not Allowed');
        return send(res, 200, oauth(req, url));
      }
      const route = routes[url.pathname];
      if (!route) throw new DarajaError(404, '404.001.01', 'Resource not found');
      if (req.method !== 'POST') throw new DarajaError(405, '405.001', 'Method Not Allowed');
      authenticate(req);
      send(res, 200, route(await readJson(req)));
    } catch (error) {
      const e = error instanceof DarajaError ? error : new DarajaError(500, '500.003.1001', 'Internal Server Error');
      send(res, e.status, { requestId: gatewayId(7), errorCode: e.code, errorMessage: e.message });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  function find(checkoutRequestId: string): FakePush {
    const push = pushes.get(checkoutRequestId);
    if (!push) throw new Error(`fake Daraja: no STK push ${checkoutRequestId}`);
    return push;
  }

  function callbackBody(checkoutRequestId: string): string {
    const push = find(checkoutRequestId);
    if (push.state === 'pending') throw new Error(`fake Daraja: push ${checkoutRequestId} is still pending`);
    const stkCallback: Record<string, unknown> = {
      MerchantRequestID: push.merchantRequestId,
      CheckoutRequestID: push.checkoutRequestId,
      ResultCode: push.resultCode,
      ResultDesc: push.resultDesc,
    };
    if (push.state === 'paid') {
      stkCallback.CallbackMetadata = {
        Item: [
          { Name: 'Amount', Value: push.amount },
          { Name: 'MpesaReceiptNumber', Value: push.receipt },
          { Name: 'TransactionDate', Value: Number(eat(push.settledAt!).slice(0, 14)) },
          { Name: 'PhoneNumber', Value: Number(push.phone) },
        ],
      };
    }
    return JSON.stringify({ Body: { stkCallback } });
  }

  async function deliver(push: FakePush): Promise<void> {
    const body = callbackBody(push.checkoutRequestId);
    let status: number | 'error';
    try {
      const res = await fetch(push.callbackUrl, {
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

  const settle =
    (state: Exclude<FakePushState, 'pending'>): PhoneAction =>
    async (checkoutRequestId, opts) => {
      const push = find(checkoutRequestId);
      if (push.state !== 'pending') throw new Error(`fake Daraja: push ${checkoutRequestId} is already ${push.state}`);
      push.state = state;
      push.resultCode = DARAJA_RESULTS[state].code;
      push.resultDesc = DARAJA_RESULTS[state].desc;
      push.settledAt = new Date();
      if (state === 'paid') push.receipt = pick(UPPER, 1) + pick(ALNUM, 9);
      if (opts?.callback !== false) await deliver(push);
    };

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    pushes,
    callbacks,
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
      accept: settle('paid'),
      cancel: settle('cancelled'),
      timeout: settle('timeout'),
      insufficientFunds: settle('insufficient_funds'),
      wrongPin: settle('wrong_pin'),
    },
    callbackBody,
    expireTokens() {
      for (const token of tokens.values()) token.expiresAt = 0;
    },
    async close() {
      for (const waiter of waiters) waiter.reject(new Error('fake Daraja closed'));
      waiters.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
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
): Record<string, (body: Body) => unknown> {
  const registered = new Set<string>();
  const refId = () => `${randomInt(10_000, 99_999)}-${randomInt(1_000_000, 99_999_999)}-1`;
  const invalidShortCode = () => new DarajaError(400, '400.001', 'Invalid ShortCode');
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
      if (!text(body.CallBackURL).startsWith('https://') || !validUrl(text(body.CallBackURL)))
        throw invalid('CallBackURL');
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
        .filter((p) => p.shortcode === shortCode && p.state === 'paid' && p.settledAt !== null)
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
