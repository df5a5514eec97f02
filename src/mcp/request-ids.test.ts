import { describe, expect, it } from 'vitest';
import { RequestIdsInFlight, type RequestIdClaim } from './request-ids.ts';

function claimed(ids: RequestIdsInFlight, list: (string | number)[]): RequestIdClaim {
  const claim = ids.claim(list);
  if ('refused' in claim) throw new Error(`refused ${claim.refused}`);
  return claim;
}

describe('JSON-RPC request ids in flight in one session', () => {
  it('an id is taken until its answer is handed over, then free again; 7 and "7" are different ids', () => {
    const ids = new RequestIdsInFlight();
    const first = claimed(ids, [7]);
    ids.dispatched(7);
    expect(ids.claim([7])).toEqual({ refused: 7 });
    claimed(ids, ['7']);
    // The POST is done but the call still runs (its client went away): the id stays taken.
    ids.finished(first);
    expect(ids.claim([7])).toEqual({ refused: 7 });
    ids.answered(7);
    expect('refused' in ids.claim([7])).toBe(false);
  });

  it("a batch's ids are freed together, once every request of it is answered", () => {
    const ids = new RequestIdsInFlight();
    const batch = claimed(ids, [1, 2]);
    ids.dispatched(1);
    ids.dispatched(2);
    ids.finished(batch);
    ids.answered(1);
    expect(ids.claim([1])).toEqual({ refused: 1 });
    ids.answered(2);
    expect(ids.size).toBe(0);
  });

  it('a request the transport never dispatched (a refused POST) frees its id when the POST is done', () => {
    const ids = new RequestIdsInFlight();
    const refused = claimed(ids, [9]);
    expect(ids.claim([9])).toEqual({ refused: 9 });
    ids.finished(refused);
    expect(ids.size).toBe(0);
  });

  it('a dispatched request that never gets an answer (cancelled) keeps its id taken', () => {
    const ids = new RequestIdsInFlight();
    const cancelled = claimed(ids, [3]);
    ids.dispatched(3);
    ids.finished(cancelled);
    expect(ids.claim([3])).toEqual({ refused: 3 });
  });
});
