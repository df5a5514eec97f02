import { AppError } from '../core/errors.ts';
import { parseJson, writesANumberAsNotItsDouble } from '../core/json-text.ts';

/**
 * Bodies larger than this never take the exact parser for metadata alone: metadata is at most
 * 8 KB, and the exact parser costs about ten times JSON.parse, which a caller must not be able to
 * spend on a megabyte. A number the double would not write back takes it at any size: an amount
 * is read from its digits (tools/schemas.ts), and the body limit bounds the cost.
 */
const EXACT_PARSE_MAX_CHARS = 32 * 1024;

/** The headers that say how a body is written. */
export interface BodyHeaders {
  'content-type'?: string | undefined;
  'content-encoding'?: string | undefined;
}

/**
 * A request body's bytes as JSON (the REST API and MCP over HTTP), under the body rules
 * (docs/api.md, Bodies): UTF-8 only, no content encoding, no lone surrogate. A body read any
 * other way would not be the body the caller meant (U+FFFD in a memo, a gzip stream taken for
 * JSON), so it is refused before anything runs. Every refusal is an AppError naming the rule:
 * unsupported_media_type (415) for how the body is sent, invalid_request (400) for what it holds.
 */
export function readJsonBody(bytes: Buffer, headers: BodyHeaders): unknown {
  refuseContentEncoding(headers['content-encoding']);
  refuseCharset(headers['content-type']);
  let text: string;
  try {
    // ignoreBOM keeps a byte order mark in the text, where JSON.parse refuses it, as it always did.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new AppError('invalid_request', 'The request body is not valid UTF-8: send JSON encoded as UTF-8.');
  }
  if (text.trim() === '') return undefined;
  try {
    return parseJsonBody(text);
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw new AppError(
      'invalid_request',
      error instanceof RangeError
        ? 'The request body nests too deeply to parse; metadata may nest at most 32 levels.'
        : `The request body is not valid JSON: ${(error as Error).message}.`,
    );
  }
}

function refuseContentEncoding(encoding: string | undefined): void {
  if (encoding === undefined || encoding.trim() === '' || encoding.trim().toLowerCase() === 'identity') return;
  throw new AppError(
    'unsupported_media_type',
    `Content-Encoding ${encoding} is not accepted: plainpay decodes no content encoding, so send the body uncompressed, without a Content-Encoding header.`,
  );
}

function refuseCharset(contentType: string | undefined): void {
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(contentType ?? '')?.[1];
  if (charset === undefined || /^utf-?8$/i.test(charset)) return;
  throw new AppError(
    'unsupported_media_type',
    `charset=${charset} is not accepted: request bodies are JSON encoded as UTF-8 (Content-Type: application/json or application/json; charset=utf-8).`,
  );
}

/**
 * A request body's JSON text. A "__proto__" key is refused, and so is a lone surrogate in any
 * string. A body that may carry metadata is parsed again keeping the caller's exact text
 * (core/json-text.ts), so metadata comes back as written: the key may be written with escapes, so
 * any escape counts too. A number written otherwise than its double writes (`100.00000000000000001`,
 * `1e3`) comes out as a JsonNumber, so an amount is read from its own digits.
 */
export function parseJsonBody(text: string): unknown {
  // The reviver also bounds nesting: a body too deep for it is a RangeError (a 400 naming the
  // limit), never a value deep enough to overflow whatever reads it next.
  const body = JSON.parse(text, refuseProtoKeys) as unknown;
  // Only an escape writes a surrogate in text that decoded from UTF-8: the walk is for those bodies.
  if (/\\u[dD][89a-fA-F]/.test(text)) refuseLoneSurrogates(body);
  const numbers = writesANumberAsNotItsDouble(text);
  if (!numbers) {
    if (text.length > EXACT_PARSE_MAX_CHARS || !(text.includes('metadata') || text.includes('\\u'))) return body;
    // Written as JSON.stringify writes it (what most clients send): every part of it comes back
    // as written without the exact parser.
    if (JSON.stringify(body) === text) return body;
  }
  try {
    return parseJson(text, { numbers: 'as written' });
  } catch (error) {
    // Nested deeper than the exact parser goes: JSON.parse's values (metadata that deep is refused),
    // unless a number there needs its text, which JSON.parse's values have lost.
    if (numbers) throw new RangeError(`nested too deeply to read its numbers exactly: ${(error as Error).message}`);
    return body;
  }
}

/** JSON.parse reviver: a "__proto__" key could poison prototypes once the object is copied. */
function refuseProtoKeys(key: string, value: unknown): unknown {
  if (key === '__proto__') throw new SyntaxError('the key "__proto__" is not allowed');
  return value;
}

/**
 * A `\ud800` escape without its pair is not a character: stored, it becomes U+FFFD, so a memo or
 * a description would say something other than what was sent. Refused, naming where it is.
 */
function refuseLoneSurrogates(body: unknown): void {
  const stack: Array<[unknown, string]> = [[body, '']];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [value, path] = next;
    if (typeof value === 'string') {
      if (LONE_SURROGATE.test(value)) throw loneSurrogate(path);
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, inner] of Object.entries(value)) {
        const at = Array.isArray(value) ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`;
        if (LONE_SURROGATE.test(key)) throw loneSurrogate(at);
        stack.push([inner, at]);
      }
    }
  }
}

/** A high surrogate not followed by a low one, or a low one not preceded by a high one (code units, no u flag). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function loneSurrogate(path: string): AppError {
  return new AppError(
    'invalid_request',
    `${path === '' ? 'The request body' : path} holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape without its pair), which is not a character: text must be valid Unicode.`,
    path === '' ? {} : { param: path },
  );
}
