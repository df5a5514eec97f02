// The account's events as a feed, read from the API a merchant's key reads (GET /v1/events,
// newest first, keyset pages): what `plainpay listen` forwards. A client of the public API, not of
// the database: it runs on the merchant's laptop against any plainpay server.
//
// An event's `created` is stamped inside the transaction that writes it, so an event can become
// visible after a newer one did (its transaction committed later). A cursor on the newest event
// seen would skip it; instead each poll reads back to a horizon a minute behind the newest event
// seen and forwards what it has not seen yet, by id.

import { AppError, ERROR_CODES, type ErrorCode } from '../core/errors.ts';
import { parseJson } from '../core/json-text.ts';

/** An event as the list gives it; `data` parsed so that stringifyJson writes it back as sent. */
export interface FeedEvent {
  id: string;
  type: string;
  created: string;
  livemode: boolean;
  data: unknown;
}

export interface EventFeedOptions {
  /** The API host, e.g. http://localhost:3000. */
  apiUrl: string;
  apiKey: string;
  /** How long an event may take to commit after its `created`; a minute by default. */
  lagMs?: number;
  /** Events per request. */
  pageSize?: number;
  /** How a path of the API is read; apiGet (HTTP with the key) by default. Tests give a list. */
  get?: (path: string) => Promise<unknown>;
}

export interface EventFeed {
  /** Marks every event there is now as seen: the feed then yields only events written after. */
  skipExisting(): Promise<void>;
  /** The events not yet seen, oldest first. */
  poll(): Promise<FeedEvent[]>;
}

const DEFAULT_LAG_MS = 60_000;

export function eventFeed(options: EventFeedOptions): EventFeed {
  const lagMs = options.lagMs ?? DEFAULT_LAG_MS;
  const pageSize = options.pageSize ?? 25;
  /** Ids seen, with their `created` in ms; those below the horizon are dropped. */
  const seen = new Map<string, number>();
  /** Events created before this are not looked for any more. */
  let horizon = Number.NEGATIVE_INFINITY;

  const unseen = async (): Promise<FeedEvent[]> => {
    const found: FeedEvent[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await listEvents(options, pageSize, after);
      let reachedHorizon = false;
      for (const event of page.data) {
        const created = Date.parse(event.created);
        if (created < horizon) {
          reachedHorizon = true;
          break;
        }
        if (!seen.has(event.id)) found.push(event);
      }
      const last = page.data.at(-1);
      if (reachedHorizon || !page.has_more || last === undefined) break;
      after = last.id;
    }
    for (const event of found) seen.set(event.id, Date.parse(event.created));
    advanceHorizon();
    return found.reverse();
  };

  /** Moves the horizon to a lag behind the newest event seen; forgets the ids behind it. */
  const advanceHorizon = (floor = Number.NEGATIVE_INFINITY): void => {
    // A loop, never Math.max(...seen): spreading a large collection overflows the call stack.
    let newest = Number.NEGATIVE_INFINITY;
    for (const created of seen.values()) if (created > newest) newest = created;
    horizon = Math.max(horizon, newest - lagMs, floor);
    for (const [id, created] of seen) if (created < horizon) seen.delete(id);
  };

  return {
    async skipExisting() {
      // One page, newest first, not the whole history (an account may have millions of events):
      // its events are seen, and the horizon starts a lag behind its newest. Older events beyond
      // the page are behind the horizon too, else a busy minute longer than a page would be
      // forwarded as new.
      const page = await listEvents(options, pageSize);
      for (const event of page.data) seen.set(event.id, Date.parse(event.created));
      const oldest = page.data.at(-1);
      advanceHorizon(page.has_more && oldest !== undefined ? Date.parse(oldest.created) + 1 : undefined);
    },
    poll: unseen,
  };
}

interface EventPage {
  data: FeedEvent[];
  has_more: boolean;
}

/** One page of GET /v1/events; an API error becomes the AppError it describes. */
async function listEvents(options: EventFeedOptions, limit: number, startingAfter?: string): Promise<EventPage> {
  const query = new URLSearchParams({ limit: String(limit) });
  if (startingAfter !== undefined) query.set('starting_after', startingAfter);
  const body = await (options.get ?? ((path: string) => apiGet(options, path)))(`/v1/events?${query}`);
  const page = body as Partial<EventPage>;
  if (!Array.isArray(page.data) || typeof page.has_more !== 'boolean') {
    throw new AppError('unavailable', `${options.apiUrl}/v1/events did not answer with a list of events.`);
  }
  return page as EventPage;
}

/** A GET on the API with the key, its JSON answer (numbers and objects kept as written). */
export async function apiGet(options: Pick<EventFeedOptions, 'apiUrl' | 'apiKey'>, path: string): Promise<unknown> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(`${options.apiUrl}${path}`, {
      headers: { authorization: `Bearer ${options.apiKey}`, accept: 'application/json' },
      signal: AbortSignal.timeout(15_000),
    });
    text = await response.text();
  } catch (error) {
    throw new AppError('unavailable', `plainpay at ${options.apiUrl} did not answer: ${(error as Error).message}`, {
      cause: error,
    });
  }
  let body: unknown;
  try {
    body = parseJson(text);
  } catch {
    throw new AppError('unavailable', `plainpay at ${options.apiUrl} answered ${response.status} without JSON.`);
  }
  if (!response.ok) throw apiError(response.status, body);
  return body;
}

function apiError(status: number, body: unknown): AppError {
  const error = (body as { error?: { code?: unknown; message?: unknown; param?: unknown } } | null)?.error;
  const code = typeof error?.code === 'string' && error.code in ERROR_CODES ? (error.code as ErrorCode) : 'unavailable';
  const message = typeof error?.message === 'string' ? error.message : `The API answered ${status}.`;
  return new AppError(code, message, typeof error?.param === 'string' ? { param: error.param } : {});
}
