import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

const kSlot = Symbol('plainpay.runningSlot');
type TrackedResponse = ServerResponse & { [kSlot]?: number };

/**
 * The requests under way on one host, each response with its fastify reply (a response is tracked
 * by one host only: its slot is kept on it). Every request is added and removed once, so this is
 * on the hot path: parallel arrays, each response holding its own slot, and a removal moves the
 * last entry into the freed slot, so at a steady concurrency a request leaves nothing behind for
 * the old generation. A Map here reallocated its table as entries came and went (tens of thousands
 * a second under load), and since the Map lives in the old generation, each new table was promoted
 * with it: about 250 bytes of old-generation garbage a request, and a full mark-compact every few
 * seconds under load (`node --trace-gc`; docs/performance.md).
 */
export class RunningRequests {
  readonly #responses: TrackedResponse[] = [];
  readonly #replies: FastifyReply[] = [];

  /** Adds a response not under way yet; adding one again does nothing (its first slot stays right). */
  add(res: TrackedResponse, reply: FastifyReply): void {
    if (res[kSlot] !== undefined) return;
    res[kSlot] = this.#responses.length;
    this.#responses.push(res);
    this.#replies.push(reply);
  }

  /** Removes a response added before; a second removal does nothing. */
  remove(res: TrackedResponse): void {
    const slot = res[kSlot];
    if (slot === undefined) return;
    res[kSlot] = undefined;
    const lastResponse = this.#responses.pop()!;
    const lastReply = this.#replies.pop()!;
    if (lastResponse !== res) {
      this.#responses[slot] = lastResponse;
      this.#replies[slot] = lastReply;
      lastResponse[kSlot] = slot;
    }
  }

  /** A copy: the caller may answer (and so remove) requests while going through it. */
  entries(): Array<[ServerResponse, FastifyReply]> {
    return this.#responses.map((res, i) => [res, this.#replies[i]!]);
  }

  /** The live list, not a copy: read it, but remove nothing while going through it. */
  responses(): readonly ServerResponse[] {
    return this.#responses;
  }
}
