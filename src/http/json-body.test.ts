import { describe, expect, it } from 'vitest';
import { canonicalJson, exactRequestHash } from '../core/canonical-json.ts';
import { AppError } from '../core/errors.ts';
import { JsonNumber, nestsDeeperThan, sourceTextOf, stringifyJson } from '../core/json-text.ts';
import { parseJsonBody, readJsonBody } from './json-body.ts';

describe('request bodies', () => {
  it('refuses a "__proto__" key however it is written, anywhere in the body', () => {
    for (const text of [
      '{"__proto__":{"admin":true}}',
      '{"metadata":{"__proto__":1}}',
      '{"\\u005f_proto__":1}',
      '{"metadata":{"a":[{"__pr\\u006fto__":1}]}}',
    ]) {
      expect(() => parseJsonBody(text), text).toThrow(SyntaxError);
    }
    // The word as a value is data.
    expect(parseJsonBody('{"description":"__proto__"}')).toEqual({ description: '__proto__' });
  });

  it('a body nested deeper than the parser goes is refused as it is parsed, not passed on', () => {
    const deep = `{"metadata":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    expect(() => parseJsonBody(deep)).toThrow(RangeError);
  });

  it('metadata comes back as written, whether the body was written compactly or not', () => {
    const compact = parseJsonBody('{"amount":5000,"metadata":{"order":"order_1042","n":[1,2]}}') as {
      metadata: unknown;
    };
    // Nothing to keep: JSON.stringify writes it back the same.
    expect(sourceTextOf(compact.metadata)).toBeUndefined();
    expect(stringifyJson(compact.metadata)).toBe('{"order":"order_1042","n":[1,2]}');

    const spaced = parseJsonBody('{ "amount": 5000, "metadata": { "p": 1.50, "big": 12345678901234567890 } }') as {
      metadata: unknown;
    };
    expect(stringifyJson(spaced.metadata)).toBe('{"p":1.50,"big":12345678901234567890}');

    const escaped = parseJsonBody('{"metadata":{"e":"\\u00e9"}}') as { metadata: unknown };
    expect(stringifyJson(escaped.metadata)).toBe('{"e":"\\u00e9"}');

    const reordered = parseJsonBody('{"metadata":{"b":1,"1":2}}') as { metadata: unknown };
    expect(stringifyJson(reordered.metadata)).toBe('{"b":1,"1":2}');
  });

  it('a number its double would not write back keeps its text; the rest stay plain numbers', () => {
    const body = parseJsonBody(
      '{"amount":100.00000000000000001,"ttl":60.0,"e":1e3,"n":5000,"f":0.5,"metadata":{"p":1.50}}',
    ) as Record<string, unknown> & { metadata: Record<string, unknown> };
    expect(body.n).toBe(5000);
    expect(body.f).toBe(0.5);
    const amount = body.amount as JsonNumber;
    expect(amount).toBeInstanceOf(JsonNumber);
    expect([amount.text, amount.value, amount.exact, amount.hasExponent]).toEqual([
      '100.00000000000000001',
      100,
      false,
      false,
    ]);
    expect([(body.ttl as JsonNumber).exact, (body.e as JsonNumber).exact, (body.e as JsonNumber).hasExponent]).toEqual([
      true,
      true,
      true,
    ]);
    // Written back as written by stringifyJson, as the double by anything else, and hashed by its text.
    expect(stringifyJson(body.metadata)).toBe('{"p":1.50}');
    expect(stringifyJson({ amount })).toBe('{"amount":100.00000000000000001}');
    expect(JSON.stringify({ amount })).toBe('{"amount":100}');
    expect(canonicalJson({ amount })).toBe('{"amount":100}');
    expect(exactRequestHash({ amount })).not.toBe(exactRequestHash({ amount: 100 }));
    // Not a level of nesting: metadata as deep as allowed stays allowed with one at the bottom.
    expect(nestsDeeperThan({ a: { b: amount } }, 2)).toBe(false);
    // Digits inside strings are text, not numbers.
    expect(parseJsonBody('{"memo":"1.50","n":1}')).toEqual({ memo: '1.50', n: 1 });
  });

  it('reads only UTF-8 JSON bytes, sent as they are', () => {
    const json = { 'content-type': 'application/json' };
    const refusal = (bytes: Buffer, headers: Record<string, string> = json): [number, string] => {
      try {
        readJsonBody(bytes, headers);
      } catch (error) {
        if (error instanceof AppError) return [error.status, error.message];
      }
      return [200, ''];
    };
    expect(readJsonBody(Buffer.from('{"memo":"café 😀"}'), json)).toEqual({ memo: 'café 😀' });
    expect(readJsonBody(Buffer.from('  '), json)).toBeUndefined();
    expect(refusal(Buffer.from('{}'), { 'content-type': 'application/json; charset=utf-16' })[0]).toBe(415);
    expect(refusal(Buffer.from('{}'), { ...json, 'content-encoding': 'br' })[0]).toBe(415);
    expect(refusal(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x22, 0x7d]))).toEqual([
      400,
      'The request body is not valid UTF-8: send JSON encoded as UTF-8.',
    ]);
    // A byte order mark stays in the text, where JSON refuses it, as it always did.
    expect(refusal(Buffer.from('\ufeff{}'))[0]).toBe(400);
    expect(refusal(Buffer.from('{"a":[{"b":"\\udc00"}]}'))[1]).toMatch(/^a\[0\]\.b holds a lone UTF-16 surrogate/);
    expect(refusal(Buffer.from('{"\\ud800":1}'))[1]).toMatch(/^\\ud800|holds a lone/);
  });
});
