import { describe, expect, it } from 'vitest';
import { eventFeed, type FeedEvent } from './event-feed.ts';

/** GET /v1/events over a list the test fills: newest first, pages by starting_after, as the API. */
function api(events: FeedEvent[]): (path: string) => Promise<unknown> {
  return async (path) => {
    const query = new URL(path, 'http://api').searchParams;
    const sorted = [...events].sort((a, b) => b.created.localeCompare(a.created) || b.id.localeCompare(a.id));
    const after = query.get('starting_after');
    const from = after === null ? 0 : sorted.findIndex((e) => e.id === after) + 1;
    const limit = Number(query.get('limit'));
    return { object: 'list', data: sorted.slice(from, from + limit), has_more: from + limit < sorted.length };
  };
}

const at = (second: number, id: string): FeedEvent => ({
  id,
  type: 'payment.paid',
  created: new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString(),
  livemode: false,
  data: {},
});

describe('the event feed of plainpay listen', () => {
  it('yields only events written after the start, oldest first, each once, across pages', async () => {
    const events = [at(1, 'evt_old1'), at(2, 'evt_old2')];
    const feed = eventFeed({ apiUrl: 'http://api', apiKey: 'k', pageSize: 2, get: api(events) });
    await feed.skipExisting();
    expect(await feed.poll()).toEqual([]);
    events.push(at(3, 'evt_a'), at(4, 'evt_b'), at(5, 'evt_c'));
    expect((await feed.poll()).map((e) => e.id)).toEqual(['evt_a', 'evt_b', 'evt_c']);
    expect(await feed.poll()).toEqual([]);
  });

  it('still yields an event that became visible after a newer one (its transaction committed later)', async () => {
    const events = [at(10, 'evt_first')];
    const feed = eventFeed({ apiUrl: 'http://api', apiKey: 'k', get: api(events) });
    await feed.skipExisting();
    events.push(at(30, 'evt_newer'));
    expect((await feed.poll()).map((e) => e.id)).toEqual(['evt_newer']);
    // Stamped at 20 s, visible only now: older than the newest seen, within the lag.
    events.push(at(20, 'evt_late'));
    expect((await feed.poll()).map((e) => e.id)).toEqual(['evt_late']);
  });

  it('stops reading back at the horizon: a minute behind the newest event seen', async () => {
    const events = [at(0, 'evt_0')];
    const feed = eventFeed({ apiUrl: 'http://api', apiKey: 'k', lagMs: 5_000, get: api(events) });
    await feed.skipExisting();
    events.push(at(59, 'evt_59'));
    expect((await feed.poll()).map((e) => e.id)).toEqual(['evt_59']);
    // Older than the horizon (59 s - 5 s): not looked for any more.
    events.push(at(40, 'evt_too_late'));
    expect(await feed.poll()).toEqual([]);
  });

  it('starts on a long history by reading one page, not all of it', async () => {
    // 200,000 events, one every 10 ms: paging through them all, then Math.max(...ids), threw.
    const start = Date.UTC(2026, 0, 1);
    const history: FeedEvent[] = [];
    for (let i = 0; i < 200_000; i++) {
      history.push({
        id: `evt_${i}`,
        type: 'payment.paid',
        created: new Date(start + i * 10).toISOString(),
        livemode: false,
        data: {},
      });
    }
    const newestFirst = history.slice().reverse();
    const fresh: FeedEvent[] = [];
    const position = new Map(newestFirst.map((e, i) => [e.id, i]));
    let requests = 0;
    const get = async (path: string): Promise<unknown> => {
      requests += 1;
      const query = new URL(path, 'http://api').searchParams;
      // Newest first: the fresh events, then the history (an index, so paging all of it stays fast).
      const newer = fresh.slice().reverse();
      const after = query.get('starting_after');
      const inHistory = after === null ? undefined : position.get(after);
      const from =
        after === null
          ? 0
          : inHistory !== undefined
            ? newer.length + inHistory + 1
            : newer.findIndex((e) => e.id === after) + 1;
      const limit = Number(query.get('limit'));
      const at = (i: number): FeedEvent | undefined => (i < newer.length ? newer[i] : newestFirst[i - newer.length]);
      const data: FeedEvent[] = [];
      for (let i = from; i < from + limit; i++) {
        const event = at(i);
        if (event !== undefined) data.push(event);
      }
      return { object: 'list', data, has_more: from + limit < newer.length + newestFirst.length };
    };
    const feed = eventFeed({ apiUrl: 'http://api', apiKey: 'k', pageSize: 25, get });
    await feed.skipExisting();
    expect(requests).toBe(1);
    // The minute before the newest holds 6,000 events, far more than the page: none comes back.
    expect(await feed.poll()).toEqual([]);
    const last = start + 199_999 * 10;
    fresh.push({
      id: 'evt_new',
      type: 'payment.paid',
      created: new Date(last + 1_000).toISOString(),
      livemode: false,
      data: {},
    });
    expect((await feed.poll()).map((e) => e.id)).toEqual(['evt_new']);
  });
});
