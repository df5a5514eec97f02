import { deflateSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { ERROR_CODES } from '../../src/core/errors.ts';
import type { Db } from '../../src/db/database.ts';

/**
 * Building blocks of the fuzz and security suites (test/fuzz.*.test.ts, test/security.*.test.ts):
 * generators of hostile-but-plausible requests, the checks every answer must pass (no 5xx, every
 * rejection a well-formed error object, no stack trace), the route lists taken from the running
 * app (so a new endpoint is fuzzed without anyone remembering to add it), and a fingerprint of an
 * account's state for "a rejected request changes nothing".
 */

// ---------------------------------------------------------------------------------------------
// JSON text with tokens JSON.stringify cannot produce (-0, 1e400, deep nesting, duplicate keys).

export class RawJson {
  constructor(readonly text: string) {}
}

/** JSON text of a value; RawJson parts are spliced in as written, own "__proto__" keys are kept. */
export function jsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(jsonText).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    return `{${Object.keys(record)
      .map((key) => `${JSON.stringify(key)}:${jsonText(record[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** An object with an own property named key (a literal `{ __proto__: … }` would set the prototype). */
export function withOwnKey(key: string, value: unknown, base: Record<string, unknown> = {}): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  return out;
}

export const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'];

const NASTY_STRINGS = [
  '',
  ' ',
  '\t\n',
  '\u0000',
  'null',
  'undefined',
  'true',
  'NaN',
  'Infinity',
  '-0',
  '1e308',
  '0x10',
  '__proto__',
  'constructor',
  'prototype',
  '../../../etc/passwd',
  '..%2f..%2f',
  '%00',
  '%s%s%s%n',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, on purpose.
  '${7*7}{{7*7}}',
  "' or '1'='1' --",
  '"; drop table payments; --',
  '<script>alert(1)</script>',
  '\u202egnp.exe',
  '\ufeffBOM',
  'Ω≈ç√∫˜µ≤≥÷',
  '𝕿𝖍𝖊 𝖖𝖚𝖎𝖈𝖐',
  '😀👍🏽👨‍👩‍👧',
  'ｐａｙ＿ｉｄ',
  'NGN\u0000',
  'ngn',
  'USD',
  'XXX',
  'javascript:alert(1)',
  'file:///etc/passwd',
  'ftp://198.51.100.7/x',
  'http://127.0.0.1:5432/',
  'http://[::1]/',
  'https://203.0.113.10/hook',
  'pay_',
  'pay_0000000000000000000000',
  'sk_test_',
  '0x',
  '0x1111111111111111111111111111111111111111',
  '0X1111111111111111111111111111111111111111',
  '0xAbCdEf0000000000000000000000000000000000',
  '2026-13-45T99:99:99Z',
  '2026-01-01T00:00:00Z',
  '9999-12-31T23:59:59.999Z',
  '-271821-04-20T00:00:00Z',
];

/** Strings that break naive code: empty, control characters, unicode, injections, prototype names, huge. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.integer({ min: 100, max: 70_000 }).map((n) => 'x'.repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 100, max: 5_000 }).map((n) => '😀'.repeat(n)) },
);

const NASTY_NUMBERS = [
  0,
  -0,
  -1,
  1,
  0.1,
  0.5,
  1.5,
  1e-7,
  0.0000001,
  1.23456789,
  5e-324,
  1e21,
  1e308,
  -1e308,
  2 ** 31,
  2 ** 53,
  2 ** 53 + 2,
  Number.MAX_SAFE_INTEGER,
  1_000_000_000,
  1_000_000_000.5,
  1_000_000_001,
  59,
  60,
  1440,
  1441,
  10_080,
  10_081,
  10_000,
  10_001,
  100,
  101,
];

/** Numbers that sit on or just past bounds, plus tokens only raw JSON can carry (-0, 1e400 → Infinity). */
export const nastyNumber: fc.Arbitrary<number | RawJson> = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...NASTY_NUMBERS) },
  { weight: 2, arbitrary: fc.integer() },
  { weight: 2, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom('-0', '1e400', '-1e400', '1E+2', '1e-400', '0.1e1', '1.0', '123456789012345678901234567890', '-0.0')
      .map((t) => new RawJson(t)),
  },
);

/** Deep nesting: a recursive walk (JSON.stringify, a canonical hash) over it may overflow the stack. */
export const deepNesting: fc.Arbitrary<RawJson> = fc
  .tuple(fc.constantFrom('array', 'object'), fc.integer({ min: 50, max: 120_000 }))
  .map(([kind, depth]) =>
    kind === 'array'
      ? new RawJson('['.repeat(depth) + ']'.repeat(depth))
      : new RawJson('{"a":'.repeat(depth) + '1' + '}'.repeat(depth)),
  );

/** Any value a field might be given instead of the right one. */
export const junkValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: nastyString },
  { weight: 3, arbitrary: nastyNumber },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [], {}, [null], { '': '' }) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom(...PROTOTYPE_KEYS), fc.jsonValue({ maxDepth: 1 }))
      .map(([k, v]) => withOwnKey(k, { polluted: v })),
  },
  { weight: 1, arbitrary: deepNesting },
);

// ---------------------------------------------------------------------------------------------
// Bodies from an operation's JSON Schema (as /openapi.json publishes it), then mutated.

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  const?: unknown;
  items?: JsonSchema;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  default?: unknown;
}

/** Known-good values by field name: a generator cannot guess a currency code or an EIP-55 address. */
export type FieldSamples = Record<string, readonly unknown[]>;

export const FIELD_SAMPLES: FieldSamples = {
  amount: [5000, 250, 1.5, 10, 0.01],
  currency: ['NGN', 'ghs', 'KES', 'NGN'],
  redirect_url: ['https://shop.example/thanks', 'http://198.51.100.7/return?x=1'],
  webhook_url: ['https://203.0.113.10/hook', null],
  payout_address: ['0x1111111111111111111111111111111111111111', null],
  to_address: ['0x2222222222222222222222222222222222222222', '0x3333333333333333333333333333333333333333'],
  reference: ['order-1', null, ''],
  merchant_name: ['Shop', null],
  description: ['A thing', null],
  metadata: [{ order: 42 }, { nested: { a: [1, 2, { b: null }] } }, null],
  ttl_minutes: [1, 60, 1440],
  asset: ['USDC'],
  memo: ['thanks', null],
  reason: ['requested_by_customer', null],
  share_bps: [10_000, 5_000, 1],
  instruction: [
    'what is my balance?',
    'list my payments',
    'pay out 1 USDC to 0x2222222222222222222222222222222222222222',
  ],
  dry_run: [true, false],
  idempotency_key: ['agent-fuzz-1'],
  outcome: ['succeeded', 'declined'],
  live: [false, true],
  scopes: [['payments:read'], ['payments:read', 'payments:write']],
  name: ['fuzz key'],
  expires_in_minutes: [0, 60, 10_080],
  grace_period_minutes: [0, 60, 1440],
  limit: [1, 10, 100],
  status: ['pending', 'paid', 'settled'],
  created_gte: ['2020-01-01T00:00:00Z'],
  created_lte: ['2100-01-01T00:00:00Z'],
};

function typesOf(schema: JsonSchema): string[] {
  if (Array.isArray(schema.type)) return schema.type;
  if (schema.type) return [schema.type];
  return [];
}

/** A plausible value for a schema: right type and mostly in bounds, with the bounds themselves likely. */
export function arbitraryFor(
  schema: JsonSchema,
  name: string,
  samples: FieldSamples,
  depth = 0,
): fc.Arbitrary<unknown> {
  const known = samples[name];
  const fromSchema = schemaArbitrary(schema, samples, depth);
  if (!known || known.length === 0) return fromSchema;
  return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...known) }, { weight: 1, arbitrary: fromSchema });
}

function schemaArbitrary(schema: JsonSchema, samples: FieldSamples, depth: number): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum && schema.enum.length > 0) return fc.constantFrom(...schema.enum);
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches && branches.length > 0) {
    return fc.oneof(...branches.map((b) => schemaArbitrary(b, samples, depth)));
  }
  const types = typesOf(schema);
  if (types.length > 1) return fc.oneof(...types.map((type) => schemaArbitrary({ ...schema, type }, samples, depth)));
  switch (types[0]) {
    case 'object': {
      if (depth > 3 || !schema.properties) return fc.constant({});
      return objectArbitrary(schema, samples, depth + 1);
    }
    case 'array': {
      const item = schema.items && depth < 4 ? schemaArbitrary(schema.items, samples, depth + 1) : fc.constant(null);
      return fc.array(item, {
        minLength: Math.min(schema.minItems ?? 0, 3),
        maxLength: Math.min(Math.max(schema.minItems ?? 0, schema.maxItems ?? 3), 3),
      });
    }
    case 'string': {
      const min = schema.minLength ?? 0;
      const max = schema.maxLength ?? 40;
      const bounds = [min, Math.max(min - 1, 0), max, max + 1].filter((n) => n <= 5_000);
      return fc.oneof(
        fc.string({ minLength: min, maxLength: Math.min(max, min + 30) }),
        fc.constantFrom(...bounds).map((n) => 'a'.repeat(n)),
      );
    }
    case 'integer':
    case 'number': {
      const lo = schema.minimum ?? schema.exclusiveMinimum ?? -1000;
      const hi = schema.maximum ?? schema.exclusiveMaximum ?? 1_000_000;
      const edges = [lo, hi, lo - 1, hi + 1, lo + 1, hi - 1];
      const inRange =
        types[0] === 'integer'
          ? fc.integer({ min: Math.ceil(Math.max(lo, -(2 ** 31))), max: Math.floor(Math.min(hi, 2 ** 31)) })
          : fc.double({ min: lo, max: hi, noNaN: true, noDefaultInfinity: true });
      return fc.oneof(inRange, fc.constantFrom(...edges));
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

export function objectArbitrary(schema: JsonSchema, samples: FieldSamples, depth: number): fc.Arbitrary<unknown> {
  const properties = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  const names = Object.keys(properties);
  if (names.length === 0) return fc.constant({});
  const fields = names.map((name) =>
    fc.tuple(
      fc.constant(name),
      // A required field is present nine times in ten; an optional one half the time.
      required.has(name) ? fc.integer({ min: 0, max: 9 }).map((n) => n > 0) : fc.boolean(),
      arbitraryFor(properties[name]!, name, samples, depth),
    ),
  );
  return fc.tuple(...fields).map((entries) => {
    const out: Record<string, unknown> = {};
    for (const [name, present, value] of entries) if (present) out[name] = value;
    return out;
  });
}

type Mutation =
  | { kind: 'set'; at: number; value: unknown }
  | { kind: 'delete'; at: number }
  | { kind: 'add'; key: string; value: unknown }
  | { kind: 'wrap'; at: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('set' as const), at: fc.nat(), value: junkValue }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('add' as const),
      key: fc.oneof(fc.constantFrom(...PROTOTYPE_KEYS, 'id', 'account_id', 'livemode', 'status'), nastyString),
      value: junkValue,
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('wrap' as const), at: fc.nat() }) },
);

/** Every path to a value inside plain objects and arrays (not into RawJson). */
function pathsOf(value: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = []) {
  if (value instanceof RawJson || value === null || typeof value !== 'object') return out;
  const entries: [string | number, unknown][] = Array.isArray(value)
    ? value.map((v, i) => [i, v])
    : Object.keys(value).map((k) => [k, (value as Record<string, unknown>)[k]]);
  for (const [key, child] of entries) {
    const path = [...prefix, key];
    out.push(path);
    pathsOf(child, path, out);
  }
  return out;
}

function clone(value: unknown): unknown {
  if (value instanceof RawJson || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(clone);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    Object.defineProperty(out, key, {
      value: clone((value as Record<string, unknown>)[key]),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/**
 * Values a mutation puts into the body are cloned: a generated value may be a shared constant
 * (`[null]`, a field sample), and a later mutation inside it would change it for every later run
 * (one CI run set such a constant inside itself, a cycle that overflowed the stack from then on).
 */
function applyMutation(root: unknown, m: Mutation): unknown {
  if (m.kind === 'add') {
    if (root === null || typeof root !== 'object' || Array.isArray(root) || root instanceof RawJson) return root;
    return withOwnKey(m.key, clone(m.value), root as Record<string, unknown>);
  }
  const paths = pathsOf(root);
  if (paths.length === 0) return m.kind === 'set' ? clone(m.value) : root;
  const path = paths[m.at % paths.length]!;
  const parent = path.slice(0, -1).reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], root) as
    | Record<string, unknown>
    | unknown[];
  const last = path[path.length - 1]!;
  if (m.kind === 'delete') {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last as string];
  } else if (m.kind === 'set') {
    (parent as Record<string | number, unknown>)[last] = clone(m.value);
  } else {
    (parent as Record<string | number, unknown>)[last] = [(parent as Record<string | number, unknown>)[last]];
  }
  return root;
}

/** A valid-ish body with zero to three mutations: wrong types, missing fields, unknown and prototype keys. */
export function mutatedBody(base: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc
    .tuple(base, fc.array(mutation, { maxLength: 3 }))
    .map(([value, mutations]) => mutations.reduce((acc, m) => applyMutation(acc, m), clone(value)));
}

/**
 * Any text up to 50 code points, lone surrogates included. Built once: a `binary` string arbitrary
 * maps every code point at construction (about a million entries), which per call cost the REST
 * fuzz a few seconds and generates nothing different.
 */
const binaryText = fc.string({ unit: 'binary', maxLength: 50 });

/** Body text for a JSON endpoint: mostly a mutated valid body, else any JSON, broken JSON or nothing. */
export function bodyText(base: fc.Arbitrary<unknown> | undefined): fc.Arbitrary<string | undefined> {
  const object = base ?? fc.constant({});
  const valid = object.map(jsonText);
  return fc.oneof(
    { weight: 10, arbitrary: mutatedBody(object).map(jsonText) },
    { weight: 3, arbitrary: valid },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 1, arbitrary: junkValue.map(jsonText) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        valid.map((t) => t.slice(0, Math.max(0, t.length - 1))),
        valid.map((t) => `\ufeff${t}`),
        valid.map((t) => `${t},`),
        valid.map((t) => t.replace('{', '{"__proto__":{"polluted":true},')),
        valid.map((t) => t.replace('{', '{"constructor":{"prototype":{"polluted":true}},')),
        valid.map((t) => t.replace(/"([a-z_]+)":/, '"$1":1,"$1":')),
        fc.constantFrom('{', '[', '"', 'nul', '{"a":NaN}', "{'a':1}", '{"a":1}/* c */', '\u0000', ' ', '\n'),
        binaryText,
      ),
    },
    { weight: 1, arbitrary: fc.constant(undefined) },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 100_000, max: 1_000_000 })
        .map((n) => JSON.stringify({ description: 'x'.repeat(n), metadata: { big: 'y'.repeat(n % 9000) } })),
    },
  );
}

// ---------------------------------------------------------------------------------------------
// Amount texts: how a JSON number may be written, and what the API must make of it (docs/api.md,
// Amounts). The oracle is written here from the rule, not taken from the code under test.

const digits = (min: number, max: number): fc.Arbitrary<string> =>
  fc.array(fc.constantFrom(...'0123456789'), { minLength: min, maxLength: max }).map((d) => d.join(''));

/**
 * An amount as raw JSON text: plain decimals around the bounds, fractions longer than any currency
 * has (where a double rounds: `100.00000000000000001`), trailing zeros, exponents of every sign and
 * case, values a double cannot hold (1e400), negatives and zeros.
 */
export const amountText: fc.Arbitrary<string> = fc
  .record({
    sign: fc.oneof({ weight: 9, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constant('-') }),
    integer: fc.oneof(
      fc.constantFrom('0', '1', '100', '999999999', '1000000000', '1000000001', '12345678901234567890'),
      fc.bigInt(0n, 10n ** 12n).map(String),
    ),
    fraction: fc.oneof(
      { weight: 3, arbitrary: fc.constant('') },
      { weight: 3, arbitrary: digits(1, 8) },
      { weight: 2, arbitrary: digits(9, 30) },
      // Zeros then a digit far past any currency's decimals: the double rounds it away.
      {
        weight: 2,
        arbitrary: fc
          .tuple(fc.integer({ min: 1, max: 25 }), fc.constantFrom('1', '5', '9'))
          .map(([n, d]) => `${'0'.repeat(n)}${d}`),
      },
      { weight: 1, arbitrary: fc.integer({ min: 1, max: 8 }).map((n) => '0'.repeat(n)) },
    ),
    exponent: fc.oneof(
      { weight: 6, arbitrary: fc.constant('') },
      {
        weight: 2,
        arbitrary: fc
          .tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.integer({ min: 0, max: 400 }))
          .map(([e, sign, n]) => `${e}${sign}${n}`),
      },
    ),
  })
  .map(
    ({ sign, integer, fraction, exponent }) => `${sign}${integer}${fraction === '' ? '' : `.${fraction}`}${exponent}`,
  );

/**
 * What the API must make of an amount text in a currency with `decimals` places: the minor units,
 * or refused. Refused: an exponent (whatever its value), a sign, zero, more decimal places than the
 * currency has once trailing zeros are dropped, more than 1,000,000,000.
 */
export function expectedMinor(text: string, decimals: number): bigint | 'refused' {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text);
  if (match === null) return 'refused';
  const [, integer = '', fraction = ''] = match;
  const kept = fraction.replace(/0+$/, '');
  if (kept.length > decimals) return 'refused';
  const minor = BigInt(integer + kept.padEnd(decimals, '0'));
  if (minor === 0n || minor > 1_000_000_000n * 10n ** BigInt(decimals)) return 'refused';
  return minor;
}

// ---------------------------------------------------------------------------------------------
// Body encodings: the bytes and headers of a JSON body, and whether the body rules allow them
// (docs/api.md, Bodies: UTF-8 JSON only, no content encoding, no lone surrogate).

export interface EncodedBody {
  /** What was done to the body, for a failure message. */
  variant: string;
  headers: Record<string, string>;
  payload: Buffer;
  /** Whether the body rules allow it (then it must not be refused for how it is written). */
  allowed: boolean;
}

const ALLOWED_CHARSETS = ['utf-8', 'UTF-8', '"utf-8"', 'utf8', 'Utf-8'];
const REFUSED_CHARSETS = [
  'utf-16',
  'UTF-16LE',
  'utf-16be',
  'latin1',
  'iso-8859-1',
  'us-ascii',
  'windows-1252',
  'utf-7',
  'utf-32',
  '',
];
const REFUSED_ENCODINGS = ['gzip', 'GZIP', 'br', 'deflate', 'x-unknown', 'gzip, identity', 'compress'];
/** Byte sequences no UTF-8 decoder may accept: a stray continuation, overlong forms, an encoded surrogate, a cut sequence. */
const INVALID_UTF8 = [
  [0xff],
  [0xfe],
  [0x80],
  [0xc0, 0xaf],
  [0xe0, 0x80, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xe2, 0x82],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
];
const LONE_SURROGATES = ['\\ud800', '\\uDBFF', '\\udc00', '\\uDFFF', '\\ud83d\\ud83d', '\\ude00\\ud83d'];
const GOOD_TEXT = ['é', '😀', '\\ud83d\\ude00', '\\u00e9', 'naïve', '日本'];

/**
 * A body around `template`'s `@@` (placed inside a JSON string) written every way a client might:
 * allowed ones (a UTF-8 charset in any spelling, identity encoding, non-ASCII text, escaped pairs)
 * and refused ones (another charset, a UTF-16 body, any content encoding with a plain or a really
 * compressed body, invalid UTF-8, a lone surrogate escape).
 */
export function encodedBody(template: string): fc.Arbitrary<EncodedBody> {
  const utf8 = (text: string): Buffer => Buffer.from(text, 'utf8');
  const plain = template.replace('@@', 'x');
  const json = 'application/json';
  return fc.oneof(
    fc.constantFrom(...ALLOWED_CHARSETS).map((c) => ({
      variant: `charset=${c}`,
      headers: { 'content-type': `${json}; charset=${c}` },
      payload: utf8(plain),
      allowed: true,
    })),
    fc.constantFrom(...REFUSED_CHARSETS).map((c) => ({
      variant: `charset=${c} on a UTF-8 body`,
      headers: { 'content-type': `${json}; charset=${c}` },
      payload: utf8(plain),
      allowed: false,
    })),
    fc.constant({
      variant: 'a UTF-16LE body declared as such',
      headers: { 'content-type': `${json}; charset=utf-16le` },
      payload: Buffer.from(plain, 'utf16le'),
      allowed: false,
    }),
    fc.constant({
      variant: 'Content-Encoding: identity',
      headers: { 'content-type': json, 'content-encoding': 'identity' },
      payload: utf8(plain),
      allowed: true,
    }),
    fc
      .tuple(fc.constantFrom(...REFUSED_ENCODINGS), fc.constantFrom('plain', 'gzip', 'deflate'))
      .map(([encoding, body]) => ({
        variant: `Content-Encoding: ${encoding} on a ${body} body`,
        headers: { 'content-type': json, 'content-encoding': encoding },
        payload: body === 'gzip' ? gzipSync(plain) : body === 'deflate' ? deflateSync(plain) : utf8(plain),
        allowed: false,
      })),
    fc.constantFrom(...INVALID_UTF8).map((bytes) => {
      const [before = '', after = ''] = template.split('@@');
      return {
        variant: `invalid UTF-8 ${bytes.map((b) => b.toString(16)).join(' ')} in a string`,
        headers: { 'content-type': json },
        payload: Buffer.concat([utf8(before), Buffer.from(bytes), utf8(after)]),
        allowed: false,
      };
    }),
    fc.constantFrom(...LONE_SURROGATES).map((surrogate) => ({
      variant: `lone surrogate ${surrogate} in a string`,
      headers: { 'content-type': json },
      payload: utf8(template.replace('@@', surrogate)),
      allowed: false,
    })),
    fc.constantFrom(...GOOD_TEXT).map((text) => ({
      variant: `${text} in a string`,
      headers: { 'content-type': json },
      payload: utf8(template.replace('@@', text)),
      allowed: true,
    })),
  );
}

// ---------------------------------------------------------------------------------------------
// Headers and paths.

export const CONTENT_TYPES = [
  'application/json; charset=utf-8',
  'Application/JSON',
  'application/json;charset=UTF-16',
  'application/json; charset=latin1',
  'application/json; boundary=x; q=1',
  ' application/json',
  'application/json\t',
  'application/jsonx',
  'application/vnd.api+json',
  'application/problem+json',
  'application/json, text/plain',
  'text/json',
  'text/plain',
  'text/html',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=----fuzz',
  'application/octet-stream',
  '*/*',
  '',
  ';',
  'application/',
  '😀/json',
];

export function contentType(): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 12, arbitrary: fc.constant('application/json') },
    { weight: 4, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

export const idempotencyKey: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 8, arbitrary: fc.constant(undefined) },
  { weight: 3, arbitrary: fc.stringMatching(/^[\x21-\x7e]{1,40}$/) },
  {
    weight: 2,
    arbitrary: fc.constantFrom('', ' ', 'a b', '\t', 'ключ', '😀', 'a'.repeat(255), 'a'.repeat(256), 'x'.repeat(9000)),
  },
);

/** Authorization values that are not a usable key. */
export function badAuthorization(validKey: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(
      'Bearer',
      'Bearer ',
      'bearer',
      `Bearer ${validKey}x`,
      `Bearer ${validKey.slice(0, -1)}`,
      `Bearer ${validKey.slice(0, -1)}${validKey.endsWith('A') ? 'B' : 'A'}`,
      `Bearer ${validKey} ${validKey}`,
      `Basic ${Buffer.from(`${validKey}:`).toString('base64')}`,
      validKey,
      `Token ${validKey}`,
      `Bearer sk_live_${'0'.repeat(38)}`,
      `Bearer sk_test_${'Z'.repeat(38)}`,
      `Bearer sk_prod_${'a'.repeat(38)}`,
      `Bearer ${'a'.repeat(20_000)}`,
      `Bearer ${validKey.toUpperCase()}`,
      `Bearer\t${validKey}x`,
      'Bearer null',
      'Bearer undefined',
    ),
    nastyString.map((s) => `Bearer ${s.replace(/[\r\n]/g, '')}`),
  );
}

/** A path segment a client should never send: traversal, bad escapes, control bytes, huge ids. */
export const junkSegment: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '..',
    '.',
    '%2e%2e',
    '%2E%2E%2F%2E%2E',
    '%',
    '%zz',
    '%E0%A4%A',
    '%00',
    '%0d%0aSet-Cookie:%20x=1',
    '%2F',
    'a%2Fb',
    '%25',
    ';x=1',
    '%3Bx',
    '%C0%AE%C0%AE',
    'pay_%00',
    '%u0041',
    '%F0%9F%98%80',
    '*',
    '~',
    '',
  ),
  fc.integer({ min: 101, max: 20_000 }).map((n) => 'a'.repeat(n)),
  fc.integer({ min: 1, max: 200 }).map((n) => 'pay_' + '9'.repeat(n)),
  nastyString.map((s) => encodeURIComponent(s.slice(0, 3000))),
);

/** A value for a path parameter: a real id (own, another account's, the other mode's) or junk. */
export function pathParam(realIds: readonly string[]): fc.Arbitrary<string> {
  return realIds.length > 0
    ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...realIds) }, { weight: 4, arbitrary: junkSegment })
    : junkSegment;
}

export const junkQuery: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    '?',
    '?&&&',
    '?a=%',
    '?%%=%%',
    '?limit=1&limit=2',
    '?limit=1e400',
    '?limit=-0',
    '?limit=0x10',
    '?__proto__[polluted]=1',
    '?constructor[prototype][polluted]=1',
    '?starting_after=',
    '?starting_after=%00',
    '?status[]=pending',
    '?a[b][c][d][e]=1',
    '?=',
    '?#',
  ),
  fc.integer({ min: 1000, max: 30_000 }).map((n) => `?q=${'x'.repeat(n)}`),
  fc.dictionary(nastyString, nastyString, { maxKeys: 3 }).map((d) => `?${new URLSearchParams(d).toString()}`),
);

/** A query string for a GET operation: its own parameters, plausibly filled and mutated, or junk. */
export function queryString(schema: JsonSchema | undefined, samples: FieldSamples): fc.Arbitrary<string> {
  const own = schema
    ? mutatedBody(objectArbitrary(schema, samples, 0)).map((q) => {
        if (q === null || typeof q !== 'object' || Array.isArray(q) || q instanceof RawJson) return '';
        const params = new URLSearchParams();
        for (const key of Object.keys(q)) {
          const value = (q as Record<string, unknown>)[key];
          params.append(key, typeof value === 'string' ? value : jsonText(value));
        }
        const text = params.toString();
        return text ? `?${text}` : '';
      })
    : fc.constant('');
  return fc.oneof({ weight: 4, arbitrary: own }, { weight: 1, arbitrary: junkQuery });
}

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

// ---------------------------------------------------------------------------------------------
// What the app exposes.

export interface Route {
  method: HttpMethod;
  /** fastify pattern, e.g. /v1/payments/:payment_id */
  url: string;
}

/** Every route of a fastify instance (HEAD twins of GET routes left out), from printRoutes' tree. */
export function listRoutes(app: FastifyInstance): Route[] {
  const routes: Route[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)[├└]── (.*) \(([A-Z, ]+)\)$/u.exec(line);
    if (!match) continue;
    const depth = [...match[1]!].length / 4;
    stack.length = depth;
    const url = stack.join('') + match[2]!;
    stack.push(match[2]!);
    for (const method of match[3]!.split(',').map((m) => m.trim())) {
      if (method !== 'HEAD') routes.push({ method: method as HttpMethod, url });
    }
  }
  return routes;
}

export interface Operation {
  method: HttpMethod;
  /** fastify pattern */
  path: string;
  operationId: string;
  /** null: public; 'any': any valid key; else the scope the key needs. */
  scope: string | null;
  params: string[];
  body: JsonSchema | undefined;
  query: JsonSchema | undefined;
}

interface OpenApiOperation {
  operationId: string;
  security: unknown[];
  'x-required-scope'?: string;
  parameters?: { name: string; in: string; required?: boolean; schema: JsonSchema }[];
  requestBody?: { content: { 'application/json': { schema: JsonSchema } } };
}

/** The documented operations of /openapi.json, with their scope, path parameters and schemas. */
export async function documentedOperations(app: FastifyInstance): Promise<Operation[]> {
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
    paths: Record<string, Record<string, OpenApiOperation>>;
  };
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const queryParams = (op.parameters ?? []).filter((p) => p.in === 'query');
      ops.push({
        method: method.toUpperCase() as HttpMethod,
        path: path.replace(/\{([A-Za-z_]+)\}/g, ':$1'),
        operationId: op.operationId,
        scope: op.security.length === 0 ? null : (op['x-required-scope'] ?? 'any'),
        params: [...path.matchAll(/\{([A-Za-z_]+)\}/g)].map((m) => m[1]!),
        body: op.requestBody?.content['application/json'].schema,
        query:
          queryParams.length > 0
            ? {
                type: 'object',
                properties: Object.fromEntries(queryParams.map((p) => [p.name, p.schema])),
                required: queryParams.filter((p) => p.required).map((p) => p.name),
              }
            : undefined,
      });
    }
  }
  return ops;
}

export function fillPath(pattern: string, values: Record<string, string>): string {
  return pattern.replace(/:([A-Za-z_]+)/g, (_m, name: string) => values[name] ?? name);
}

// ---------------------------------------------------------------------------------------------
// Checks on answers.

const ERROR_TYPES: ReadonlySet<string> = new Set(Object.values(ERROR_CODES).map((c) => c.type));
const STACK_TRACE = /\n\s+at [^\n]+\(|node_modules|\.ts:\d+:\d+/;

/** Why a response is not a well-formed API error object (empty when it is). */
export function errorObjectProblems(res: LightMyRequestResponse): string[] {
  const problems: string[] = [];
  const type = String(res.headers['content-type'] ?? '');
  if (!/^application\/json/.test(type)) problems.push(`content-type is ${type || 'missing'}`);
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    return [...problems, 'body is not JSON'];
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return [...problems, 'body is not an object'];
  const keys = Object.keys(body);
  if (keys.length !== 1 || keys[0] !== 'error') problems.push(`top-level keys are ${keys.join(',')}`);
  const error = (body as { error?: unknown }).error as Record<string, unknown> | undefined;
  if (!error || typeof error !== 'object') return [...problems, 'error is not an object'];
  for (const key of Object.keys(error)) {
    if (!['type', 'message', 'param', 'code'].includes(key)) problems.push(`unexpected error.${key}`);
  }
  if (typeof error.type !== 'string' || !ERROR_TYPES.has(error.type)) problems.push(`error.type ${String(error.type)}`);
  if (typeof error.message !== 'string' || error.message.length === 0) problems.push('error.message missing');
  else if (STACK_TRACE.test(error.message)) problems.push('error.message carries a stack trace or source path');
  if (error.param !== undefined && typeof error.param !== 'string') problems.push('error.param is not a string');
  if (error.code !== undefined) {
    const known = ERROR_CODES[error.code as keyof typeof ERROR_CODES];
    if (!known) problems.push(`error.code ${String(error.code)} is not a known code`);
    else if (known.status !== res.statusCode || known.type !== error.type) {
      problems.push(`error.code ${String(error.code)} does not match status ${res.statusCode} / type ${error.type}`);
    }
  }
  return problems;
}

/** The rule for every API answer: below 500; a 4xx is an error object; nothing looks like a stack trace. */
export function apiResponseProblems(res: LightMyRequestResponse, method: string): string[] {
  const problems: string[] = [];
  if (res.statusCode >= 500) problems.push(`status ${res.statusCode}`);
  if (res.statusCode >= 400 && method !== 'HEAD') problems.push(...errorObjectProblems(res));
  if (STACK_TRACE.test(res.body)) problems.push('body carries a stack trace or source path');
  return problems;
}

export function describeRequest(req: {
  method: string;
  url: string;
  headers?: Record<string, string | undefined>;
  payload?: string | undefined;
}): string {
  const clip = (s: string) => (s.length > 300 ? `${s.slice(0, 300)}…(${s.length} chars)` : s);
  return `${req.method} ${clip(req.url)} headers=${clip(JSON.stringify(req.headers ?? {}))} body=${clip(req.payload ?? '<none>')}`;
}

/** Only the headers that are set (inject takes no undefined values). */
export function definedHeaders(headers: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) out[name] = value;
  return out;
}

// ---------------------------------------------------------------------------------------------
// State.

/**
 * A fingerprint of everything the given accounts own: one digest per table. The audit trail of
 * refused calls is left out on purpose: on the agent and MCP channels, and for money tools, the
 * pipeline records a refused call (agent_actions status failed/denied, its action_log entry, and a
 * denied idempotency record) by design. Columns that reads may touch (api_keys.last_used_at,
 * dashboard_sessions.last_seen_at) are left out too.
 */
export async function stateFingerprint(db: Db, accountIds: readonly string[]): Promise<Record<string, string>> {
  const ids = sql.join(accountIds.map((id) => sql`${id}`));
  const digestOf = (rows: string) =>
    sql`count(*) || ':' || coalesce(md5(string_agg(${sql.raw(rows)}, '|' order by ${sql.raw(rows)})), '')`;
  const table = (name: string, rows = 't::text', extra = '') =>
    sql`(select ${digestOf(rows)} from ${sql.table(name)} t where t.account_id in (${ids}) ${sql.raw(extra)}) as ${sql.ref(name)}`;
  const columns = [
    sql`(select ${digestOf('t::text')} from accounts t where t.id in (${ids})) as accounts`,
    table(
      'api_keys',
      "concat_ws(',', t.id, t.name, t.livemode, t.scopes::text, t.expires_at, t.revoked_at, t.rotated_from)",
    ),
    table('webhook_secrets', "concat_ws(',', t.id, t.created_at, t.expires_at)"),
    table('payments'),
    sql`(select ${digestOf('a::text')} from payment_attempts a join payments p on p.id = a.payment_id where p.account_id in (${ids})) as payment_attempts`,
    table('webhook_endpoints'),
    table('events'),
    table('event_deliveries'),
    sql`(select ${digestOf('w::text')} from webhook_attempts w join events e on e.id = w.event_id where e.account_id in (${ids})) as webhook_attempts`,
    table('idempotency_keys', 't::text', "and (t.response::jsonb->>'kind') is distinct from 'denied'"),
    table('ledger_accounts'),
    sql`(select ${digestOf('e::text')} from ledger_entries e join ledger_accounts a on a.id = e.account_id where a.account_id in (${ids})) as ledger_entries`,
    table('transfers'),
    table('payouts'),
    table('revenue_shares'),
    table('refunds'),
    table('policy_spend'),
    table('policies'),
    table('confirmations'),
    table('agent_runs'),
    table('agent_actions', 't::text', "and t.status not in ('failed', 'denied')"),
    table('action_log', 't::text', "and t.entry_type not in ('action.failed', 'action.denied')"),
    table('dashboard_sessions', "concat_ws(',', t.id_hash, t.key_id, t.csrf_token, t.expires_at, t.revoked_at)"),
  ];
  const result = await sql<Record<string, string>>`select ${sql.join(columns)}`.execute(db);
  return result.rows[0]!;
}

/** The tables whose fingerprint differs. */
export function changedTables(before: Record<string, string>, after: Record<string, string>): string[] {
  return Object.keys(after).filter((name) => before[name] !== after[name]);
}

/**
 * Watches the accounts' state across requests. The full fingerprint costs a few milliseconds, so it
 * is taken only when something was written: a transaction that writes gets a transaction id, and
 * while pg_current_snapshot()'s xmax stands still nobody has written anything. The database must
 * be the file's own (test/support/harness.ts): another file's settlement or expiry job would
 * change these accounts' payments between two requests, and a rejected request would be blamed.
 */
export class StateWatch {
  #mark = '';
  #print: Record<string, string> = {};

  constructor(
    private readonly db: Db,
    private readonly accountIds: readonly string[],
  ) {}

  async start(): Promise<this> {
    this.#mark = await writeMark(this.db);
    this.#print = await stateFingerprint(this.db, this.accountIds);
    return this;
  }

  /** Call after each request: the tables a rejected request changed (always [] for an accepted one). */
  async check(rejected: boolean): Promise<string[]> {
    const mark = await writeMark(this.db);
    if (mark === this.#mark) return [];
    // The mark first: a write landing between the two is seen again next time, never missed.
    const print = await stateFingerprint(this.db, this.accountIds);
    const changed = rejected ? changedTables(this.#print, print) : [];
    this.#mark = mark;
    this.#print = print;
    return changed;
  }
}

async function writeMark(db: Db): Promise<string> {
  const result = await sql<{ xmax: string }>`select pg_snapshot_xmax(pg_current_snapshot())::text as xmax`.execute(db);
  return result.rows[0]!.xmax;
}

/** arb one time in n, else null. (fc.option's freq is the other way round: null one time in freq.) */
export function oneIn<T>(n: number, arb: fc.Arbitrary<T>): fc.Arbitrary<T | null> {
  return fc.oneof({ weight: n - 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: arb });
}
