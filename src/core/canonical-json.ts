import { JsonNumber, sourceTextOf, stringifyJson } from './json-text.ts';
import { sha256Hex } from './sha256.ts';

/**
 * JSON with object keys sorted at every level: two inputs that mean the same produce the same
 * text, so a hash of it identifies a request (idempotency) or an approved action (confirmations).
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value, false));
}

export function canonicalHash(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/**
 * The hash of a request as the caller wrote it: a caller's JSON kept as written (metadata,
 * core/json-text.ts) counts by its text, so `12345678901234567890` and `12345678901234567891`
 * are two requests. Only for comparing two live requests (idempotency keys, references): what is
 * stored and read back goes through canonicalHash.
 */
export function exactRequestHash(value: unknown): string {
  return sha256Hex(stringifyJson(sortKeys(value, true)));
}

function sortKeys(value: unknown, exact: boolean): unknown {
  if (exact && sourceTextOf(value) !== undefined) return value;
  // A number as the caller wrote it: its double, unless the text counts (exact).
  if (value instanceof JsonNumber) return value.value;
  if (Array.isArray(value)) return value.map((item) => sortKeys(item, exact));
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const inner = (value as Record<string, unknown>)[key];
      if (inner !== undefined) out[key] = sortKeys(inner, exact);
    }
    return out;
  }
  if (typeof value === 'bigint') return value.toString();
  return value;
}
