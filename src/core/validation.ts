import { z } from 'zod';
import { AppError } from './errors.ts';
import { JsonNumber } from './json-text.ts';

/**
 * Parses untrusted input with a zod schema and turns the first problem into an
 * invalid_request error that names the field (param) and the rule it broke.
 */
export function parseInput<S extends z.ZodType>(
  schema: S,
  raw: unknown,
  options: { paramPrefix?: string } = {},
): z.output<S> {
  // reportInput keeps issue.input, which tells a missing field from one of the wrong type.
  const result = schema.safeParse(raw === undefined ? {} : raw, { reportInput: true });
  if (result.success) return result.data;
  throw zodIssueToAppError(result.error.issues[0]!, options.paramPrefix);
}

export function zodIssueToAppError(issue: z.core.$ZodIssue, paramPrefix?: string): AppError {
  const path = [...(paramPrefix ? [paramPrefix] : []), ...issue.path.map(String)];
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0]!;
    const param = [...path, key].join('.');
    return new AppError('invalid_request', `Received unknown parameter: ${param}.`, { param });
  }
  const param = path.length > 0 ? formatPath(path) : undefined;
  if (issue.code === 'invalid_type' && issue.input === undefined && param) {
    return new AppError('invalid_request', `Missing required parameter: ${param}.`, { param });
  }
  if (!param) {
    return new AppError('invalid_request', `The request body ${lowerFirst(issue.message)}.`.replace(/\.\.$/, '.'));
  }
  return new AppError('invalid_request', `Invalid ${param}: ${lowerFirst(issue.message)}`.replace(/([^.])$/, '$1.'), {
    param,
  });
}

function formatPath(path: string[]): string {
  return path.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

function lowerFirst(text: string): string {
  // Keep messages that start with a field name or code as written.
  return /^[A-Z][a-z]/.test(text) ? text[0]!.toLowerCase() + text.slice(1) : text;
}

/**
 * An idempotency key, on every channel (the Idempotency-Key header, MCP's `idempotency_key`):
 * 1 to 255 printable ASCII characters. The same (account, mode, key) returns the first result.
 */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

// The database cannot compare against years outside 0001-9999 (a 400, not a 500).
const EARLIEST = Date.parse('0001-01-01T00:00:00Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');

// A date-time must carry its zone: "2026-03-10T00:00:00" would be read in the server's local time,
// so a merchant's "yesterday" would depend on where the service runs. A bare date is 00:00 UTC.
const ISO_INSTANT = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-](\d{2}):(\d{2})))?$/;

function daysInMonth(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
}

/**
 * The instant an ISO 8601 text names, or undefined. Stricter than Date.parse, which takes
 * "2026-02-30" as March 2nd and "T24:00" as the next day: a range someone mistyped would quietly
 * cover the wrong days.
 */
function parseInstant(text: string): Date | undefined {
  const match = ISO_INSTANT.exec(text);
  if (!match) return undefined;
  const [, year, month, day, hour = '0', minute = '0', second = '0', , offsetHours = '0', offsetMinutes = '0'] = match;
  const m = Number(month);
  if (m < 1 || m > 12 || Number(day) < 1 || Number(day) > daysInMonth(Number(year), m)) return undefined;
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return undefined;
  if (Number(offsetHours) > 23 || Number(offsetMinutes) > 59) return undefined;
  const at = Date.parse(text);
  if (!(at >= EARLIEST && at <= LATEST)) return undefined;
  return new Date(at);
}

/** A point in time given by a caller: every time filter and range of every tool. */
export const isoTime = (field: string, meaning: string) =>
  z
    .string({ error: `${field} must be an ISO 8601 date-time string, e.g. 2026-03-10T00:00:00Z` })
    .refine(
      (value) => parseInstant(value) !== undefined,
      `${field} must be an ISO 8601 date-time with a time zone (e.g. 2026-03-10T00:00:00Z or 2026-03-10T00:00:00+01:00) or a date (2026-03-10, meaning 00:00 UTC), between the years 0001 and 9999`,
    )
    .transform((value) => parseInstant(value) as Date)
    .describe(meaning);

/**
 * A whole-number field of a request body (ttl_minutes, share_bps, expires_in_minutes) read from
 * its text (core/json-text.ts keeps it when the double would not write it back): `2500.0` and `25e2` are 2500,
 * but `2500.0000000000001`, which a double takes for 2500, is not a whole number.
 */
export function writtenWholeNumber<S extends z.ZodType>(number: S, notWhole: string) {
  return z.preprocess((value, ctx) => {
    if (!(value instanceof JsonNumber)) return value;
    // Beyond 2^53 every double is whole: the field's own range refuses those.
    if (value.exact || !(Math.abs(value.value) < 2 ** 53)) return value.value;
    ctx.addIssue({ code: 'custom', message: notWhole });
    return z.NEVER;
  }, number);
}
