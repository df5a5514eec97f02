import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { describe, expect, it } from 'vitest';
import { RunningRequests } from './running-requests.ts';

function request(name: string): { res: ServerResponse; reply: FastifyReply } {
  return { res: { name } as unknown as ServerResponse, reply: { name } as unknown as FastifyReply };
}

function names(running: RunningRequests): string[] {
  return running
    .entries()
    .map(([res, reply]) => {
      // Each response stays paired with its own reply through every move.
      expect((reply as unknown as { name: string }).name).toBe((res as unknown as { name: string }).name);
      return (res as unknown as { name: string }).name;
    })
    .sort();
}

describe('RunningRequests', () => {
  it('keeps exactly the requests added and not yet removed, whatever the order of removal', () => {
    const running = new RunningRequests();
    const all = ['a', 'b', 'c', 'd', 'e', 'f'].map(request);
    for (const { res, reply } of all) running.add(res, reply);
    const left = new Set(['a', 'b', 'c', 'd', 'e', 'f']);
    // The first, a middle one, the moved one (f took b's slot), the last, then the rest.
    for (const name of ['b', 'f', 'a', 'e', 'c', 'd']) {
      const { res } = all.find((r) => (r.res as unknown as { name: string }).name === name)!;
      running.remove(res);
      left.delete(name);
      expect(names(running)).toEqual([...left].sort());
      expect(running.responses()).toHaveLength(left.size);
    }
  });

  it('a second removal of the same request changes nothing', () => {
    const running = new RunningRequests();
    const [a, b, c] = ['a', 'b', 'c'].map(request);
    for (const { res, reply } of [a!, b!, c!]) running.add(res, reply);
    running.remove(a!.res);
    running.remove(a!.res);
    expect(names(running)).toEqual(['b', 'c']);
    // Added again (a new request would be a new response; this checks the slot was cleared).
    running.add(a!.res, a!.reply);
    running.remove(c!.res);
    expect(names(running)).toEqual(['a', 'b']);
  });

  it('adding a request again keeps one entry, and its removal leaves none behind', () => {
    const running = new RunningRequests();
    const [a, b] = ['a', 'b'].map(request);
    running.add(a!.res, a!.reply);
    running.add(b!.res, b!.reply);
    running.add(a!.res, a!.reply);
    expect(names(running)).toEqual(['a', 'b']);
    running.remove(a!.res);
    running.remove(b!.res);
    expect(running.responses()).toHaveLength(0);
  });

  it('entries() is a copy: removing while going through it skips nothing', () => {
    const running = new RunningRequests();
    const all = ['a', 'b', 'c', 'd'].map(request);
    for (const { res, reply } of all) running.add(res, reply);
    const seen: ServerResponse[] = [];
    for (const [res] of running.entries()) {
      seen.push(res);
      running.remove(res);
    }
    expect(seen).toHaveLength(4);
    expect(running.responses()).toHaveLength(0);
  });
});
