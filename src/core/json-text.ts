import { randomBytes, randomInt } from 'node:crypto';

/**
 * JSON a caller wrote, returned as they wrote it. The API document's rule 4 says metadata comes
 * back unchanged on reads and in webhooks, but JSON.parse then JSON.stringify is not the identity:
 * `12345678901234567890` becomes `12345678901234567000`, `-0` becomes `0`, `1.50` becomes `1.5`,
 * `"\u00e9"` becomes `"é"`, integer-like keys move to the front and a repeated key collapses.
 *
 * So values parsed here carry their source text (tokens exactly as written, whitespace between
 * tokens dropped) wherever re-serialising would change it, and `stringifyJson` writes that text
 * back verbatim. Everything else is ordinary JS data: code that reads a field sees the parsed
 * value, and a serialiser that does not know the tag (an SDK) still writes valid, if rounded, JSON.
 * Never mutate a tagged value: the tag would then describe something else. Spreads and clones
 * drop the tag (it is a non-enumerable symbol), which is safe.
 */

const SOURCE_TEXT = Symbol('plainpay.jsonSourceText');

type Tagged = object & { [SOURCE_TEXT]: string };

function isTagged(value: unknown): value is Tagged {
  return typeof value === 'object' && value !== null && SOURCE_TEXT in value;
}

/**
 * A JSON number of a request body whose text its double does not give back: `100.00000000000000001`
 * (the double is 100), `1e3`, `1.50`, `12345678901234567890`. A money amount is read from the
 * digits the caller wrote, never from a double, so the body parser keeps the text; numbers written
 * as JSON.stringify writes them (nearly all of them) stay plain numbers, whose text String() gives.
 * Everywhere else it behaves as its double: valueOf, and JSON.stringify writes the double (but
 * stringifyJson the text, like a tagged value).
 */
export class JsonNumber {
  constructor(
    /** The token as written. */
    readonly text: string,
    /** Number(text): rounded, perhaps infinite. */
    readonly value: number,
  ) {
    Object.defineProperty(this, SOURCE_TEXT, { value: text, enumerable: false });
    Object.freeze(this);
  }

  /** Whether the double is exactly the number written (`1.50` and `1e3` are; `100.00000000000000001` is not). */
  get exact(): boolean {
    return Number.isFinite(this.value) && decimalValue(this.text) === decimalValue(String(this.value));
  }

  /** Whether the text carries an exponent (`1e3`, `5E-1`). */
  get hasExponent(): boolean {
    return /[eE]/.test(this.text);
  }

  valueOf(): number {
    return this.value;
  }

  toJSON(): unknown {
    return writing === undefined ? this.value : markFor(writing, this.text);
  }
}

/**
 * A number's decimal value as one text, whatever way it is written: `1.50`, `15e-1` and `1.5`
 * all give `15e-1`; zero has no sign. Exact: digits are moved, never computed with.
 */
function decimalValue(text: string): string | undefined {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (match === null) return undefined;
  const [, sign, integer = '', fraction = '', exponent = '0'] = match;
  const digits = (integer + fraction).replace(/^0+/, '');
  if (digits === '') return '0';
  const significant = digits.replace(/0+$/, '');
  const scale = BigInt(exponent) - BigInt(fraction.length) + BigInt(digits.length - significant.length);
  return `${sign}${significant}e${scale}`;
}

/** Whether `text` holds a number token its double does not write back the same (the body parser's cue to keep it). */
export function writesANumberAsNotItsDouble(text: string): boolean {
  // Strings first in the alternation, so digits inside one are never taken for a number.
  const tokens = /"[^"\\]*(?:\\.[^"\\]*)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
  for (let found = tokens.exec(text); found !== null; found = tokens.exec(text)) {
    const token = found[0];
    if (token[0] !== '"' && String(Number(token)) !== token) return true;
  }
  return false;
}

function tag<T extends object>(value: T, text: string): T {
  Object.defineProperty(value, SOURCE_TEXT, { value: text, enumerable: false });
  if (Object.hasOwn(value, 'toJSON')) {
    // The caller's own "toJSON" member: no hook fits beside it (stringifyJson below).
    unhookable += 1;
    unhookableCollected.register(value, undefined);
  } else {
    Object.defineProperty(value, 'toJSON', { value: writeSourceText, enumerable: false });
  }
  // A change to a tagged value would leave its text saying something else: refuse it loudly.
  return Object.freeze(value);
}

/**
 * One stringifyJson call: its number (in its marks; random, so that a mark that leaked out of one
 * call tells nothing of another's) and the source texts its marks stand for. Both are made at the
 * call's first mark: most payloads (a ping, a payment without metadata) have none, and a randomInt
 * on every response was a measurable share of GET /v1/ping.
 */
interface Writing {
  call: number | undefined;
  texts: string[] | undefined;
}
/**
 * The stringifyJson call under way, if any: JSON.stringify is synchronous, so the one whose
 * JSON.stringify is running (a call made inside another, from a getter, restores the outer one).
 */
let writing: Writing | undefined;

function markFor(call: Writing, text: string): string {
  call.call ??= randomInt(2 ** 48 - 1);
  call.texts ??= [];
  call.texts.push(text);
  return `${MARK}${call.call}:${call.texts.length - 1}`;
}

/**
 * A tagged value's toJSON (non-enumerable, like the tag): inside stringifyJson it stands for the
 * value's source text, by a mark; any other serializer (JSON.stringify, a logger, an SDK) gets the
 * value itself and writes its parsed values.
 */
function writeSourceText(this: Tagged): unknown {
  return writing === undefined ? this : markFor(writing, this[SOURCE_TEXT]);
}

/**
 * Tagged objects alive that carry a "toJSON" member of their own (a caller's metadata may hold
 * one), so no hook: while there are any, stringifyJson takes the replacer, which finds them.
 */
let unhookable = 0;
const unhookableCollected = new FinalizationRegistry<undefined>(() => {
  unhookable -= 1;
});

/** The source text a parsed value carries, if re-serialising it would not reproduce that text. */
export function sourceTextOf(value: unknown): string | undefined {
  return isTagged(value) ? value[SOURCE_TEXT] : undefined;
}

/**
 * Marks of a tagged value inside JSON.stringify's output, replaced by its text: the call's number
 * (48 random bits), then the text's index. Unguessable (128 random bits per process), and only
 * marks of the call being finished are replaced, so a caller's string can neither become nor break
 * JSON, even one copied from a mark that leaked (a plain JSON.stringify run from inside a call
 * writes marks): it names another call.
 */
const MARK = `\u0000json-text:${randomBytes(16).toString('hex')}:`;
const MARK_PATTERN = new RegExp(`"${JSON.stringify(MARK).slice(1, -1).replace(/\\/g, '\\\\')}(\\d+):(\\d+)"`, 'g');

/**
 * JSON.stringify (with `space` for people), except that tagged values are written as their source
 * text. Each tagged value's toJSON hands JSON.stringify a mark, so JSON.stringify runs without a
 * call back into JavaScript for every key: a replacer function (the way the tagged values without
 * a hook are found) made every payment response, stored response and webhook body cost 1.5 to 2
 * times as much to write.
 */
export function stringifyJson(value: unknown, space?: number): string {
  const outer = writing;
  const call: Writing = { call: undefined, texts: undefined };
  let out: string | undefined;
  try {
    if (unhookable > 0) {
      // The hooks stay quiet (they give the value itself); the replacer finds every tagged value.
      writing = undefined;
      out = JSON.stringify(
        value,
        function (this: Record<string, unknown>, key, replaced) {
          // `this[key]` is the value before toJSON (whose hook, quiet here, gave the value itself).
          const original = this[key];
          return isTagged(original) ? markFor(call, original[SOURCE_TEXT]) : replaced;
        },
        space,
      );
    } else {
      writing = call;
      out = JSON.stringify(value, undefined, space);
    }
  } finally {
    writing = outer;
  }
  // JSON.stringify answers undefined for undefined (and functions): passed on, as it always was.
  const texts = call.texts;
  if (texts === undefined || out === undefined) return out as string;
  const number = String(call.call);
  return out.replace(MARK_PATTERN, (mark, markCall: string, index: string) =>
    markCall === number ? (texts[Number(index)] ?? mark) : mark,
  );
}

/**
 * A json column's text (kept as written, json not jsonb) as values. What we wrote with
 * JSON.stringify parses natively; only text JSON.stringify would not reproduce takes the slower
 * parser that keeps it, and text nested deeper than that parser goes gets JSON.parse's values.
 */
export function parseStoredJson(text: string): unknown {
  const value = JSON.parse(text) as unknown;
  if (JSON.stringify(value) === text) return value;
  try {
    return parseJson(text);
  } catch {
    return value;
  }
}

/** Whether objects and arrays nest more than `limit` levels in `value`; without recursion, so any depth is safe. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [inner, depth] = next;
    if (typeof inner !== 'object' || inner === null || inner instanceof JsonNumber) continue;
    if (depth + 1 > limit) return true;
    for (const child of Object.values(inner)) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * JSON.parse, keeping the source text of every object or array that JSON.stringify would change.
 * With `numbers: 'as written'` (request bodies), a number whose text String() of its double would
 * not give back is a JsonNumber.
 */
export function parseJson(text: string, options: { numbers?: 'doubles' | 'as written' } = {}): unknown {
  const parser = new LosslessParser(text, options.numbers === 'as written');
  const { value } = parser.value(0);
  parser.end();
  return value;
}

/** Deeper than this is refused: real payloads are shallow, and recursion must not blow the stack. */
const MAX_DEPTH = 256;

interface Parsed {
  value: unknown;
  /** The tokens as written, no whitespace. */
  text: string;
  /** JSON.stringify(value) !== text. */
  changed: boolean;
}

class LosslessParser {
  private at = 0;

  constructor(
    private readonly source: string,
    private readonly numbersAsWritten: boolean,
  ) {}

  end(): void {
    this.skipSpace();
    if (this.at !== this.source.length) this.fail('unexpected data after the JSON value');
  }

  value(depth: number): Parsed {
    if (depth > MAX_DEPTH) this.fail(`nested deeper than ${MAX_DEPTH} levels`);
    this.skipSpace();
    const c = this.source[this.at];
    if (c === '{') return this.object(depth);
    if (c === '[') return this.array(depth);
    if (c === '"') {
      const token = this.stringToken();
      const value = JSON.parse(token) as string;
      return { value, text: token, changed: JSON.stringify(value) !== token };
    }
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.number();
    for (const [word, value] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (this.source.startsWith(word, this.at)) {
        this.at += word.length;
        return { value, text: word, changed: false };
      }
    }
    return this.fail('unexpected character');
  }

  private object(depth: number): Parsed {
    this.at++; // {
    const value: Record<string, unknown> = {};
    const parts: string[] = [];
    const keys: string[] = [];
    let changed = false;
    this.skipSpace();
    if (this.source[this.at] === '}') {
      this.at++;
      return { value, text: '{}', changed: false };
    }
    for (;;) {
      this.skipSpace();
      if (this.source[this.at] !== '"') this.fail('expected a string key');
      const keyToken = this.stringToken();
      const key = JSON.parse(keyToken) as string;
      this.skipSpace();
      if (this.source[this.at] !== ':') this.fail("expected ':'");
      this.at++;
      const member = this.value(depth + 1);
      if (Object.hasOwn(value, key)) changed = true; // a repeated key: the last wins, the text keeps both
      // defineProperty: a "__proto__" key is data, never the prototype.
      Object.defineProperty(value, key, { value: member.value, enumerable: true, writable: true, configurable: true });
      keys.push(key);
      parts.push(`${keyToken}:${member.text}`);
      changed ||= member.changed || JSON.stringify(key) !== keyToken;
      this.skipSpace();
      const next = this.source[this.at++];
      if (next === '}') break;
      if (next !== ',') this.fail("expected ',' or '}'");
    }
    // Integer-like keys are enumerated first by JS objects, whatever order they were written in.
    if (!changed) changed = Object.keys(value).some((key, index) => key !== keys[index]);
    const text = `{${parts.join(',')}}`;
    return { value: changed ? tag(value, text) : value, text, changed };
  }

  private array(depth: number): Parsed {
    this.at++; // [
    const value: unknown[] = [];
    const parts: string[] = [];
    let changed = false;
    this.skipSpace();
    if (this.source[this.at] === ']') {
      this.at++;
      return { value, text: '[]', changed: false };
    }
    for (;;) {
      const item = this.value(depth + 1);
      value.push(item.value);
      parts.push(item.text);
      changed ||= item.changed;
      this.skipSpace();
      const next = this.source[this.at++];
      if (next === ']') break;
      if (next !== ',') this.fail("expected ',' or ']'");
    }
    const text = `[${parts.join(',')}]`;
    return { value: changed ? tag(value, text) : value, text, changed };
  }

  private number(): Parsed {
    const match = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
    match.lastIndex = this.at;
    const found = match.exec(this.source);
    if (!found) return this.fail('invalid number');
    this.at += found[0].length;
    const token = found[0];
    const value = Number(token);
    if (JSON.stringify(value) === token) return { value, text: token, changed: false };
    return { value: this.numbersAsWritten ? new JsonNumber(token, value) : value, text: token, changed: true };
  }

  private stringToken(): string {
    const start = this.at++;
    for (;;) {
      const c = this.source[this.at++];
      if (c === undefined) this.fail('unterminated string');
      if (c === '"') return this.source.slice(start, this.at);
      if (c === '\\') this.at++;
    }
  }

  private skipSpace(): void {
    for (;;) {
      const c = this.source[this.at];
      if (c !== ' ' && c !== '\n' && c !== '\r' && c !== '\t') return;
      this.at++;
    }
  }

  private fail(message: string): never {
    throw new SyntaxError(`Invalid JSON at position ${this.at}: ${message}`);
  }
}
