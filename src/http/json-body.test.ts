import { describe, expect, it } from 'vitest';
import { sourceTextOf, stringifyJson } from '../core/json-text.ts';
import { parseJsonBody } from './json-body.ts';

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
});
