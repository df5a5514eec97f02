import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  amountText,
  encodedBody,
  expectedMinor,
  FIELD_SAMPLES,
  jsonText,
  mutatedBody,
  objectArbitrary,
  RawJson,
  type JsonSchema,
} from './support/fuzz.ts';

/**
 * The fuzz suites' own generators. A body that holds a shared value (a field sample, a junk
 * constant such as `[null]`) can be mutated inside it by a later mutation, which changes that value
 * for every run after: one CI run built a cycle that way (a constant set inside itself), and every
 * request after it overflowed the stack in jsonText. So no two bodies may share an object.
 */

const SCHEMA: JsonSchema = {
  type: 'object',
  required: ['amount', 'currency'],
  properties: {
    amount: { type: 'number' },
    currency: { type: 'string' },
    metadata: { type: 'object' },
    scopes: { type: 'array', items: { type: 'string' } },
  },
};

/** Every object and array inside value, value included (RawJson is immutable and may be shared). */
function containers(value: unknown, out: object[] = []): object[] {
  if (value === null || typeof value !== 'object' || value instanceof RawJson) return out;
  out.push(value);
  for (const child of Object.values(value)) containers(child, out);
  return out;
}

describe('mutatedBody', () => {
  it('gives each body objects of its own: no object is shared between bodies or with the samples', () => {
    const before = structuredClone(FIELD_SAMPLES);
    const owner = new Map<object, number>();
    for (const sample of Object.values(FIELD_SAMPLES)) for (const c of containers(sample)) owner.set(c, -1);
    const bodies = fc.sample(mutatedBody(objectArbitrary(SCHEMA, FIELD_SAMPLES, 0)), { numRuns: 5_000, seed: 7 });
    const shared: string[] = [];
    bodies.forEach((body, index) => {
      expect(() => jsonText(body)).not.toThrow();
      for (const c of containers(body)) {
        const first = owner.get(c);
        if (first !== undefined && first !== index)
          shared.push(`body ${index} shares ${JSON.stringify(c)} with ${first}`);
        owner.set(c, index);
      }
    });
    expect(shared.slice(0, 5)).toEqual([]);
    expect(FIELD_SAMPLES).toEqual(before);
  });
});

describe('amountText and its oracle', () => {
  it('the oracle is the rule: digits as written, no exponent, no more decimals than the currency has', () => {
    expect(expectedMinor('100.50', 2)).toBe(10050n);
    expect(expectedMinor('2.500000', 6)).toBe(2_500_000n);
    expect(expectedMinor('1000000000', 0)).toBe(1_000_000_000n);
    expect(expectedMinor('100.00000000000000001', 6)).toBe('refused');
    expect(expectedMinor('1.0000001', 6)).toBe('refused');
    expect(expectedMinor('10.5', 0)).toBe('refused');
    expect(expectedMinor('1e3', 2)).toBe('refused');
    expect(expectedMinor('1.5e1', 2)).toBe('refused');
    expect(expectedMinor('0.00', 2)).toBe('refused');
    expect(expectedMinor('-1', 2)).toBe('refused');
    expect(expectedMinor('1000000000.01', 2)).toBe('refused');
  });

  it('generates every kind of text: accepted amounts, exponents, and decimals a double rounds away', () => {
    const texts = fc.sample(amountText, { numRuns: 2_000, seed: 33 });
    for (const text of texts) expect(() => JSON.parse(text), text).not.toThrow();
    const kinds = {
      accepted: texts.filter((t) => typeof expectedMinor(t, 6) === 'bigint').length,
      exponent: texts.filter((t) => /[eE]/.test(t)).length,
      // The double's own text has lost digits the caller wrote (the rounding that once moved money).
      rounded: texts.filter(
        (t) => !/[eE]/.test(t) && /\.\d*[1-9]/.test(t) && !t.includes(String(Number(t)).replace(/^-/, '')),
      ).length,
      infinite: texts.filter((t) => !Number.isFinite(Number(t))).length,
    };
    expect(kinds.accepted).toBeGreaterThan(100);
    expect(kinds.exponent).toBeGreaterThan(100);
    expect(kinds.rounded).toBeGreaterThan(100);
    expect(kinds.infinite).toBeGreaterThan(5);
  });
});

describe('encodedBody', () => {
  const template = '{"memo":"a@@b"}';
  const decode = (payload: Buffer): string => new TextDecoder('utf-8', { fatal: true }).decode(payload);
  const lone = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

  it('is what it says: allowed bodies are UTF-8 JSON of the template, refused ones break a body rule', () => {
    const bodies = fc.sample(encodedBody(template), { numRuns: 1_000, seed: 33 });
    for (const body of bodies) {
      const encoding = body.headers['content-encoding'];
      const charset = /charset=("?)([^";]*)\1/.exec(body.headers['content-type'] ?? '')?.[2];
      const utf8Charset = charset === undefined || /^utf-?8$/i.test(charset);
      if (body.allowed) {
        expect(encoding === undefined || encoding === 'identity', body.variant).toBe(true);
        expect(utf8Charset, body.variant).toBe(true);
        const memo = (JSON.parse(decode(body.payload)) as { memo: string }).memo;
        expect(lone.test(memo), body.variant).toBe(false);
        continue;
      }
      const brokenBytes = (() => {
        try {
          return lone.test((JSON.parse(decode(body.payload)) as { memo: string }).memo);
        } catch {
          return true;
        }
      })();
      const breaks = (encoding !== undefined && encoding !== 'identity') || !utf8Charset || brokenBytes;
      expect(breaks, body.variant).toBe(true);
    }
    const variants = new Set(bodies.map((b) => b.variant.split(' ')[0]));
    for (const kind of ['charset=utf-8', 'Content-Encoding:', 'invalid', 'lone', 'a']) expect(variants).toContain(kind);
    expect(bodies.some((b) => b.payload[0] === 0x1f && b.payload[1] === 0x8b)).toBe(true);
  });
});
