import { JsonNumber } from '../core/json-text.ts';

/**
 * JSON-RPC messages the SDK's transport would answer with the wrong code, refused here with the
 * right one before anything runs (JSON-RPC 2.0 §5.1, docs/mcp.md):
 *
 * - an empty batch `[]` is -32600 Invalid Request; the transport took it for a batch of
 *   notifications and answered 202 Accepted, as if something had been received;
 * - `tools/call` arguments that are not an object are -32602 Invalid params; the SDK's schema
 *   check threw first and the answer was -32603 Internal error carrying a validation dump.
 */
export interface MalformedMessage {
  status: number;
  code: number;
  message: string;
  id: string | number | null;
}

export function malformedMessage(body: unknown): MalformedMessage | undefined {
  if (Array.isArray(body) && body.length === 0) {
    return { status: 400, code: -32600, message: 'Invalid Request: an empty batch holds no request', id: null };
  }
  const messages = Array.isArray(body) ? body : [body];
  for (const message of messages) {
    const id = argumentsNotAnObject(message);
    if (id === undefined) continue;
    const text = 'Invalid params: tools/call arguments must be an object of the tool parameters';
    // One call: its own answer, to its id, the way the client waits for it. In a batch, nothing ran.
    return Array.isArray(body)
      ? { status: 400, code: -32602, message: `${text}; nothing in this batch ran`, id: null }
      : { status: 200, code: -32602, message: text, id };
  }
  return undefined;
}

/** The id of a tools/call request whose arguments are given and are not a JSON object. */
function argumentsNotAnObject(message: unknown): string | number | null | undefined {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return undefined;
  const { method, params, id } = message as { method?: unknown; params?: unknown; id?: unknown };
  if (method !== 'tools/call' || typeof params !== 'object' || params === null) return undefined;
  const args = (params as { arguments?: unknown }).arguments;
  const isObject = typeof args === 'object' && args !== null && !Array.isArray(args) && !(args instanceof JsonNumber);
  if (args === undefined || isObject) return undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}
