import { parseJson } from '../core/json-text.ts';

/**
 * Bodies larger than this never take the exact parser: metadata is at most 8 KB, and the exact
 * parser costs about ten times JSON.parse, which a caller must not be able to spend on a megabyte.
 */
const EXACT_PARSE_MAX_CHARS = 32 * 1024;

/**
 * A request body's JSON (the REST API and MCP over HTTP). A "__proto__" key is refused. A body
 * that may carry metadata is parsed again keeping the caller's exact text (core/json-text.ts), so
 * metadata comes back as written: the key may be written with escapes, so any escape counts too.
 */
export function parseJsonBody(text: string): unknown {
  // The reviver also bounds nesting: a body too deep for it is a RangeError (a 400 naming the
  // limit), never a value deep enough to overflow whatever reads it next.
  const body = JSON.parse(text, refuseProtoKeys) as unknown;
  if (text.length > EXACT_PARSE_MAX_CHARS || !(text.includes('metadata') || text.includes('\\u'))) return body;
  // Written as JSON.stringify writes it (what most clients send): every part of it comes back
  // as written without the exact parser.
  if (JSON.stringify(body) === text) return body;
  try {
    return parseJson(text);
  } catch {
    // Nested deeper than the exact parser goes: JSON.parse's values (metadata that deep is refused).
    return body;
  }
}

/** JSON.parse reviver: a "__proto__" key could poison prototypes once the object is copied. */
function refuseProtoKeys(key: string, value: unknown): unknown {
  if (key === '__proto__') throw new SyntaxError('the key "__proto__" is not allowed');
  return value;
}
