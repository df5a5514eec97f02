import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { nestsDeeperThan, parseJson, parseStoredJson, sourceTextOf, stringifyJson } from './json-text.ts';

// JSON texts as people and other languages write them: numbers JS cannot hold, -0, trailing zeros,
// exponents, escapes, integer-like and repeated keys, and whitespace between tokens.
const space = fc.constantFrom('', ' ', '\n  ', '\t');
const numberToken = fc.oneof(
  fc.constantFrom('0', '-0', '1.50', '1e3', '-2.5E-7', '12345678901234567890', '9007199254740993', '0.1000'),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
);
const stringToken = fc.oneof(
  fc.string().map((s) => JSON.stringify(s)),
  fc.constantFrom('"\\u00e9"', '"\\/path"', '"tab\\tand\\u0041"', '"é"'),
);
/** JSON texts whose object keys are drawn from `keyToken`. */
function jsonTexts(keyToken: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.letrec<{ json: string; value: string }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      numberToken,
      stringToken,
      fc.constantFrom('true', 'false', 'null'),
      tie('json'),
    ),
    json: fc.oneof(
      fc
        .array(fc.tuple(space, keyToken, space, tie('value'), space), { maxLength: 5 })
        .map((members) => `{${members.map(([a, k, b, v, c]) => `${a}${k}${b}:${v}${c}`).join(',')}}`),
      fc
        .array(fc.tuple(space, tie('value')), { maxLength: 5 })
        .map((items) => `[${items.map(([s, v]) => s + v).join(',')}]`),
    ),
  })).json;
}
const ordinaryKeys = fc.oneof(stringToken, fc.constantFrom('"1"', '"10"', '"b"', '"a"', '"__proto__"'));
/** With a caller's own "toJSON" member now and then: such an object cannot take the toJSON hook. */
const anyKeys = fc.oneof(ordinaryKeys, fc.constant('"toJSON"'));

/**
 * json-text.ts loaded afresh: no object with a "toJSON" member of its own (the tests that make
 * some) is alive in it, so stringifyJson takes the toJSON hooks, not the replacer it falls back to.
 */
async function freshModule(): Promise<typeof import('./json-text.ts')> {
  vi.resetModules();
  return import('./json-text.ts');
}

/** The text without whitespace between tokens (strings kept as they are). */
function compact(text: string): string {
  return text.replace(/("(?:[^"\\]|\\.)*")|\s+/g, (_, str: string | undefined) => str ?? '');
}

describe('JSON kept as the caller wrote it', () => {
  it('the example from the bug report comes back byte for byte, inside a larger document too', () => {
    const text = '{"f":12345678901234567890,"a":-0}';
    const parsed = parseJson(text) as Record<string, unknown>;
    expect(parsed.f).toBe(12345678901234567000); // code reading fields sees ordinary numbers
    expect(stringifyJson(parsed)).toBe(text);
    expect(stringifyJson({ id: 'pay_1', metadata: parsed, n: [1, parsed] })).toBe(
      `{"id":"pay_1","metadata":${text},"n":[1,${text}]}`,
    );
  });

  it('any JSON object or array round-trips to its tokens exactly, and parses to what JSON.parse gives', async () => {
    // Both ways of finding tagged values: the toJSON hooks (a fresh module, ordinary keys), and
    // the replacer (keys that include "toJSON").
    const fresh = await freshModule();
    for (const [json, keys] of [
      [fresh, ordinaryKeys],
      [{ parseJson, stringifyJson }, anyKeys],
    ] as const) {
      fc.assert(
        fc.property(jsonTexts(keys), (text) => {
          const parsed = json.parseJson(text);
          expect(json.stringifyJson(parsed)).toBe(compact(text));
          expect(json.stringifyJson({ wrapped: [parsed] })).toBe(`{"wrapped":[${compact(text)}]}`);
          expect(JSON.stringify(parsed)).toBe(JSON.stringify(JSON.parse(text)));
        }),
        { numRuns: 300 },
      );
    }
  });

  it('tags only what JSON.stringify would change, so ordinary data stays plain', () => {
    expect(sourceTextOf(parseJson('{"a":1,"b":[true,"x"]}'))).toBeUndefined();
    const nested = parseJson('{"plain":{"a":1},"odd":{"n":1.0}}') as Record<string, unknown>;
    expect(sourceTextOf(nested.plain)).toBeUndefined();
    expect(sourceTextOf(nested.odd)).toBe('{"n":1.0}');
  });

  it('a "__proto__" key is data, never the prototype', () => {
    const parsed = parseJson('{"__proto__":{"admin":true}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect((parsed as { admin?: boolean }).admin).toBeUndefined();
    expect(Object.keys(parsed)).toEqual(['__proto__']);
  });

  it('refuses what JSON.parse refuses, and nesting deeper than it allows', () => {
    for (const bad of ['{', '{"a":}', '[1,]', '{"a":1}x', '01', '"\u0001"', `${'['.repeat(300)}${']'.repeat(300)}`]) {
      expect(() => parseJson(bad), bad).toThrow(SyntaxError);
    }
  });

  it('a string that looks like the marker of a tagged value is written as a string', () => {
    const parsed = parseJson('{"n":-0}');
    const tricky = '\u0000json-text:x:0';
    expect(stringifyJson({ tricky, parsed })).toBe(`{"tricky":${JSON.stringify(tricky)},"parsed":{"n":-0}}`);
  });

  it('a tagged value cannot be changed, so its text never describes something else', () => {
    const parsed = parseJson('{"n":1.0}') as Record<string, unknown>;
    expect(() => {
      parsed.n = 2;
    }).toThrow(TypeError);
    expect(stringifyJson(parsed)).toBe('{"n":1.0}');
  });

  it('stored text too deep for the keeping parser still reads, as JSON.parse reads it', () => {
    const deep = `${'['.repeat(300)}1.0${']'.repeat(300)}`;
    expect(JSON.stringify(parseStoredJson(deep))).toBe(JSON.stringify(JSON.parse(deep)));
    expect(stringifyJson(parseStoredJson('{"a":-0}'))).toBe('{"a":-0}');
  });

  it('a caller\'s own "toJSON" member is data, and its object still comes back as written', () => {
    const text = '{"toJSON":1.50,"inner":{"n":-0},"list":[1.0]}';
    const parsed = parseJson(text) as Record<string, unknown>;
    expect(parsed.toJSON).toBe(1.5);
    expect(Object.keys(parsed)).toEqual(['toJSON', 'inner', 'list']);
    expect(stringifyJson({ metadata: parsed })).toBe(`{"metadata":${text}}`);
    // Other tagged values are still written from their text while such an object is alive.
    expect(stringifyJson(parseJson('{"n":-0}'))).toBe('{"n":-0}');
  });

  it('other serializers see the parsed values, even after stringifyJson threw midway', async () => {
    const fresh = await freshModule();
    const parsed = fresh.parseJson('{"n":1.50}');
    expect(() => fresh.stringifyJson({ parsed, big: 1n })).toThrow(TypeError);
    expect(JSON.stringify({ parsed })).toBe('{"parsed":{"n":1.5}}');
    expect(Object.keys(parsed as object)).toEqual(['n']);
    expect(fresh.stringifyJson({ parsed })).toBe('{"parsed":{"n":1.50}}');
  });

  it('a call made inside another (from a getter) leaves the outer one whole', async () => {
    const fresh = await freshModule();
    const [a, b, c] = ['{"n":1.50}', '{"m":2.0}', '[1.0]'].map((text) => fresh.parseJson(text));
    const value = {
      a,
      get b() {
        return fresh.stringifyJson(b);
      },
      c,
    };
    expect(fresh.stringifyJson(value)).toBe(`{"a":{"n":1.50},"b":${JSON.stringify('{"m":2.0}')},"c":[1.0]}`);
  });

  it("a mark that leaked out of one call is a plain string in any other, never another value's text", async () => {
    const fresh = await freshModule();
    const secret = fresh.parseJson('{"card":"4111","n":1.0}');
    let leaked = '';
    // A plain JSON.stringify run while stringifyJson runs writes marks: here one escapes.
    fresh.stringifyJson({
      secret,
      get spy() {
        leaked = JSON.parse(JSON.stringify({ secret })).secret;
        return 1;
      },
    });
    expect(leaked).toContain('json-text:');
    const mine = fresh.parseJson('{"note":-0}');
    expect(fresh.stringifyJson({ secret, note: leaked, mine })).toBe(
      `{"secret":{"card":"4111","n":1.0},"note":${JSON.stringify(leaked)},"mine":{"note":-0}}`,
    );
  });

  it('pretty output for people keeps the tagged text', () => {
    expect(stringifyJson({ m: parseJson('{"n":1.50}') }, 2)).toBe('{\n  "m": {"n":1.50}\n}');
  });

  it('measures nesting without recursion, at any depth', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(nestsDeeperThan(deep, 32)).toBe(true);
    expect(nestsDeeperThan({ a: { b: [1] } }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: { b: [1] } }, 2)).toBe(true);
    expect(nestsDeeperThan('x', 0)).toBe(false);
  });
});
