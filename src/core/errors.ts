/**
 * The closed set of errors the service can return (STYLE.md 3). Every failure a client can
 * see is an AppError with one of these codes; one table maps a code to its HTTP status and
 * the seed's error.type. The MCP and Claude mappings read the same table.
 */

export const ERROR_CODES = {
  invalid_request: { status: 400, type: 'invalid_request_error' },
  authentication_required: { status: 401, type: 'authentication_error' },
  authentication_failed: { status: 401, type: 'authentication_error' },
  insufficient_funds: { status: 402, type: 'insufficient_funds' },
  permission_denied: { status: 403, type: 'permission_error' },
  policy_denied: { status: 403, type: 'policy_error' },
  /** An agent's money call names a recipient, amount or payment id it did not get from the instruction or a typed read. */
  ungrounded_argument: { status: 403, type: 'policy_error' },
  /** An agent's money call while the instruction holds a condition, wait, negation, repetition or unreadable number. */
  unclear_instruction: { status: 403, type: 'policy_error' },
  not_found: { status: 404, type: 'invalid_request_error' },
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  idempotency_conflict: { status: 409, type: 'idempotency_error' },
  conflict: { status: 409, type: 'invalid_request_error' },
  payload_too_large: { status: 413, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  rate_limited: { status: 429, type: 'rate_limit_error' },
  internal: { status: 500, type: 'api_error' },
  unavailable: { status: 503, type: 'api_error' },
} as const satisfies Record<string, { status: number; type: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorBody {
  error: {
    type: string;
    message: string;
    param?: string;
    code?: string;
  };
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly param: string | undefined;
  /** Extra headers the transport should send (Retry-After on 429, WWW-Authenticate on 401). */
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { param?: string; cause?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.param = options.param;
    this.headers = options.headers ?? {};
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }

  get type(): string {
    return ERROR_CODES[this.code].type;
  }

  toBody(): ErrorBody {
    const error: ErrorBody['error'] = { type: this.type, message: this.message };
    if (this.param !== undefined) error.param = this.param;
    if (this.code !== 'internal') error.code = this.code;
    return { error };
  }
}

export function isAppError(value: unknown): value is AppError {
  return value instanceof AppError;
}

/**
 * Postgres refuses a NUL character (U+0000) in text with SQLSTATE 22021. Only a client puts one
 * there (a "%00" in a path or query, a "\u0000" in a JSON string), so it is the request's fault
 * and a 400, on every channel, not a 500 (found by test/fuzz.api.test.ts).
 */
const TEXT_WITH_NUL = '22021';

/** Seconds a client is asked to wait (Retry-After) when the database cannot be reached. */
export const UNREACHABLE_RETRY_AFTER_SECONDS = 5;

/**
 * SQLSTATEs that say the server cannot serve this connection now, not that the statement is wrong:
 * 57P01 admin_shutdown (a restart terminates every session), 57P02 crash_shutdown, 57P03
 * cannot_connect_now (starting up or shutting down), 53300 too_many_connections; and class 08
 * (connection exception) but for 08P01.
 */
const UNREACHABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
/** What the socket says when the server is gone, refuses, or never answers. */
const UNREACHABLE_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
/**
 * What pg and pg-pool throw without a code: a connection cut mid-query ("Connection terminated
 * unexpectedly"), a connect that outlasted connectionTimeoutMillis ("Connection terminated due to
 * connection timeout", "timeout exceeded when trying to connect"), a client whose connection
 * already failed ("Client has encountered a connection error and is not queryable"). Not "Client
 * was closed and is not queryable": that is a client used after release, a bug.
 */
const UNREACHABLE_MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

/**
 * True when `value` (or its cause, or one of an AggregateError's errors) says the database, or
 * another server the request needs, cannot be reached right now: a restart, a refused or cut connection, a
 * connect that timed out. Such a failure is the dependency's, not the request's: it is answered as
 * 503 `unavailable` (toAppError) and retried by the workers after a back-off.
 */
export function isConnectionFailure(value: unknown, depth = 0): boolean {
  if (value === null || typeof value !== 'object' || depth > 4) return false;
  const { code, message, cause, errors } = value as {
    code?: unknown;
    message?: unknown;
    cause?: unknown;
    errors?: unknown;
  };
  if (typeof code === 'string') {
    if (UNREACHABLE_SQLSTATES.has(code) || UNREACHABLE_ERRNOS.has(code)) return true;
    // Class 08 but 08P01 protocol_violation, which is a bug (or a statement too big to send), not an outage.
    if (/^08[0-9A-Z]{3}$/.test(code) && code !== '08P01') return true;
  }
  if (typeof message === 'string' && UNREACHABLE_MESSAGES.test(message)) return true;
  if (Array.isArray(errors) && errors.some((inner) => isConnectionFailure(inner, depth + 1))) return true;
  return cause !== undefined && isConnectionFailure(cause, depth + 1);
}

/** Wraps anything thrown into an AppError without leaking its message (it may hold internals). */
export function toAppError(value: unknown): AppError {
  if (isAppError(value)) return value;
  if ((value as { code?: unknown } | null)?.code === TEXT_WITH_NUL) {
    return new AppError('invalid_request', 'The request contains a NUL character (U+0000), which no field accepts.', {
      cause: value,
    });
  }
  if (isConnectionFailure(value)) {
    // A write cut off here ran in a transaction: it committed whole or not at all. The same
    // Idempotency-Key on the retry gives the first result if it did commit.
    return new AppError(
      'unavailable',
      `The service is temporarily unavailable: its database, or another system it depends on, cannot be reached. Retry in ${UNREACHABLE_RETRY_AFTER_SECONDS} seconds; a write retried with the same Idempotency-Key is applied at most once.`,
      { cause: value, headers: { 'Retry-After': String(UNREACHABLE_RETRY_AFTER_SECONDS) } },
    );
  }
  return new AppError('internal', 'An internal error occurred. It has been logged; please retry later.', {
    cause: value,
  });
}
