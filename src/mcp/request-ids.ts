/**
 * The JSON-RPC request ids in flight in one MCP session (docs/mcp.md, "Request ids").
 *
 * The SDK's transport matches each answer to the HTTP response that carries it by request id
 * alone: a second request with an id already in flight took over the first one's stream, so the
 * first call ran (a payout, say) and its answer went to the second caller, or nowhere. JSON-RPC
 * asks ids to be unique only while in flight, so the session keeps them here: an id is taken from
 * the moment a POST carrying it is admitted until the answers of every request of that POST have
 * been handed to the transport (the SDK releases a POST's ids together, and so do we), and a
 * request reusing a taken id is refused before it runs. An id whose answer went out is free again:
 * a new request with it is a new call.
 *
 * A request the client cancels gets no answer (the SDK drops it), so its id stays taken for the
 * rest of the session: reusing it is refused, never answered with what the cancelled call did.
 */

export type JsonRpcId = string | number;

/** The ids one POST claimed, until every one of them is answered or known never to run. */
export interface RequestIdClaim {
  readonly keys: readonly string[];
  readonly unanswered: Set<string>;
  readonly undispatched: Set<string>;
}

export class RequestIdsInFlight {
  readonly #taken = new Map<string, RequestIdClaim>();

  /** Takes every id for one POST, or names the first one already in flight (nothing is taken then). */
  claim(ids: readonly JsonRpcId[]): RequestIdClaim | { refused: JsonRpcId } {
    for (const id of ids) if (this.#taken.has(keyOf(id))) return { refused: id };
    const keys = ids.map(keyOf);
    const claim: RequestIdClaim = { keys, unanswered: new Set(keys), undispatched: new Set(keys) };
    for (const key of keys) this.#taken.set(key, claim);
    return claim;
  }

  /** The transport handed the request to the server: it will be answered (or cancelled). */
  dispatched(id: JsonRpcId): void {
    this.#taken.get(keyOf(id))?.undispatched.delete(keyOf(id));
  }

  /** The answer to this request was handed to the transport (delivered, or its client gone). */
  answered(id: JsonRpcId): void {
    const claim = this.#taken.get(keyOf(id));
    if (!claim) return;
    claim.unanswered.delete(keyOf(id));
    this.#settle(claim);
  }

  /**
   * The transport is done with the POST: a request it never dispatched (it refused the POST, say
   * for a bad protocol version header) never ran and will never be answered.
   */
  finished(claim: RequestIdClaim): void {
    for (const key of claim.undispatched) claim.unanswered.delete(key);
    claim.undispatched.clear();
    this.#settle(claim);
  }

  get size(): number {
    return this.#taken.size;
  }

  #settle(claim: RequestIdClaim): void {
    if (claim.unanswered.size > 0) return;
    for (const key of claim.keys) if (this.#taken.get(key) === claim) this.#taken.delete(key);
  }
}

/** 7 and "7" are different ids in JSON-RPC. */
function keyOf(id: JsonRpcId): string {
  return `${typeof id}:${id}`;
}

/** The id of a JSON-RPC request (not a notification, not a response), or undefined. */
export function requestIdOf(message: unknown): JsonRpcId | undefined {
  if (typeof message !== 'object' || message === null || !('method' in message) || !('id' in message)) return;
  const { id } = message;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}

/** The id a JSON-RPC response answers, or undefined for anything else. */
export function answeredIdOf(message: unknown): JsonRpcId | undefined {
  if (typeof message !== 'object' || message === null || 'method' in message || !('id' in message)) return;
  if (!('result' in message) && !('error' in message)) return;
  const { id } = message;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}
