import { PassThrough, type Readable } from 'node:stream';
import type { Logger } from '../core/logger.ts';
import { NOTIFICATION_CHANNELS, type Notifications } from '../db/notifications.ts';
import type { CheckoutStatusBody } from './view.ts';

/**
 * The checkout page's live status: GET /pay/:id/status with `Accept: text/event-stream` answers
 * with server-sent events, each one the same JSON the plain status read answers, sent when it
 * changes. The page's EventSource follows it instead of polling; the browser reconnects by itself
 * after a network blip or the lifetime cap, and the first event after a (re)connect is the status
 * as it is then, so nothing is missed in between.
 *
 * Woken by the events channel (migration 018: every events row, at commit, from any process on
 * Postgres, in this process on PGlite): payment.paid, payment.settled, payment.settlement_reverted,
 * payment.expired, payment.refunded. A notification only says "look": the stream re-reads the
 * payment. Changes no event announces are found by re-reading on a timer: an attempt that ended
 * without paying (processing → pending) or whose provider answer turned unknown (the page then
 * says it is confirming) every `recheckMs.processing`, everything else (a session whose time ran
 * out before the expiry worker passed, a lost notification) every `recheckMs.other`.
 */
export interface StatusStreamLimits {
  /** Streams open at once in this process; one more is refused (503) and the page polls slowly instead. */
  maxStreams: number;
  /** A stream ends after this long; the browser reconnects after `retryMs`. */
  lifetimeMs: number;
  /** A comment line this often, so that proxies and mobile networks keep an idle stream open. */
  heartbeatMs: number;
  /** The EventSource's reconnection delay (the `retry:` field). */
  retryMs: number;
  recheckMs: { processing: number; other: number };
}

export const STATUS_STREAM_LIMITS: StatusStreamLimits = {
  maxStreams: 2000,
  lifetimeMs: 5 * 60_000,
  heartbeatMs: 20_000,
  retryMs: 3_000,
  recheckMs: { processing: 2_000, other: 15_000 },
};

export type ReadStatus = (paymentId: string) => Promise<CheckoutStatusBody | undefined>;

interface Watcher {
  paymentId: string;
  out: PassThrough;
  /** The last JSON sent, so an unchanged status is not sent again. */
  sent: string;
  recheck?: NodeJS.Timeout;
  heartbeat: NodeJS.Timeout;
  lifetime: NodeJS.Timeout;
}

export interface StatusStreams {
  /**
   * Takes a place for one stream, or returns undefined when the process has `maxStreams` open (or
   * is stopping). The place is given back by `open`'s stream closing, or by `release` if unused.
   */
  reserve(): { open(paymentId: string, first: CheckoutStatusBody): Readable; release(): void } | undefined;
  /** Resolves once the events channel is listened to: a change committed after this wakes the stream. */
  listening(): Promise<void>;
  /** Streams open now. */
  readonly size: number;
  /** Ends every stream (the browsers reconnect, to another instance) and stops listening. */
  close(): Promise<void>;
}

export function statusStreams(
  read: ReadStatus,
  notifications: Notifications,
  logger: Pick<Logger, 'warn'>,
  limits: StatusStreamLimits = STATUS_STREAM_LIMITS,
): StatusStreams {
  const byPayment = new Map<string, Set<Watcher>>();
  let reserved = 0;
  let closed = false;
  let unlisten: Promise<() => Promise<void>> | undefined;
  /** Re-reads running, by payment; a wake-up meanwhile runs one more after it. */
  const reading = new Set<string>();
  const readAgain = new Set<string>();

  const write = (watcher: Watcher, body: CheckoutStatusBody): void => {
    if (watcher.out.writableEnded) return;
    const text = JSON.stringify(body);
    if (text !== watcher.sent) {
      watcher.sent = text;
      watcher.out.write(`data: ${text}\n\n`);
    }
    clearTimeout(watcher.recheck);
    // An attempt in flight (processing or confirming) ends, or its answer turns unknown, unannounced.
    const delay = body.status === 'processing' ? limits.recheckMs.processing : limits.recheckMs.other;
    watcher.recheck = setTimeout(() => refresh(watcher.paymentId), delay);
  };

  const refresh = (paymentId: string): void => {
    if (!byPayment.has(paymentId)) return;
    if (reading.has(paymentId)) {
      readAgain.add(paymentId);
      return;
    }
    reading.add(paymentId);
    void (async () => {
      do {
        readAgain.delete(paymentId);
        try {
          const body = await read(paymentId);
          for (const watcher of byPayment.get(paymentId) ?? []) {
            if (body) write(watcher, body);
            else watcher.out.end();
          }
        } catch (error) {
          // The database is away for a moment: the next wake-up or recheck reads again.
          logger.warn({ err: error }, 'checkout status stream could not read the payment');
          for (const watcher of byPayment.get(paymentId) ?? []) {
            clearTimeout(watcher.recheck);
            watcher.recheck = setTimeout(() => refresh(paymentId), limits.recheckMs.other);
          }
        }
      } while (readAgain.has(paymentId));
      reading.delete(paymentId);
    })();
  };

  const onNotify = (payload: string): void => {
    // '' after a lost connection to Postgres: notifications may have been missed, so every stream looks.
    if (payload === '') {
      for (const paymentId of byPayment.keys()) refresh(paymentId);
      return;
    }
    const objectId = payload.slice(payload.indexOf(' ') + 1);
    if (byPayment.has(objectId)) refresh(objectId);
  };

  const listening = (): Promise<void> => {
    if (closed) return Promise.resolve();
    unlisten ??= notifications.listen(NOTIFICATION_CHANNELS.events, onNotify);
    return unlisten.then(() => undefined);
  };

  const open = (paymentId: string, first: CheckoutStatusBody): Readable => {
    const watcher = newWatcher(paymentId, limits);
    const { out } = watcher;
    let watchers = byPayment.get(paymentId);
    if (!watchers) {
      watchers = new Set();
      byPayment.set(paymentId, watchers);
    }
    watchers.add(watcher);
    out.write(`retry: ${limits.retryMs}\n\n`);
    write(watcher, first);
    // Reserved before the host began to stop: the status now, then reconnect (to another instance).
    if (closed) out.end();
    // 'close' follows both our end() and the payer going away (fastify destroys the stream then).
    out.once('close', () => {
      clearTimeout(watcher.recheck);
      clearInterval(watcher.heartbeat);
      clearTimeout(watcher.lifetime);
      const set = byPayment.get(paymentId);
      set?.delete(watcher);
      if (set?.size === 0) byPayment.delete(paymentId);
      reserved -= 1;
    });
    return out;
  };

  return {
    reserve() {
      if (closed || reserved >= limits.maxStreams) return undefined;
      reserved += 1;
      return reservation(open, () => {
        reserved -= 1;
      });
    },
    listening,
    get size() {
      let n = 0;
      for (const set of byPayment.values()) n += set.size;
      return n;
    },
    async close() {
      closed = true;
      for (const set of byPayment.values()) for (const watcher of set) watcher.out.end();
      const stop = await unlisten?.catch(() => undefined);
      await stop?.();
    },
  };
}

/** A stream's watcher: its heartbeat comment and its lifetime cap start now. */
function newWatcher(paymentId: string, limits: StatusStreamLimits): Watcher {
  const out = new PassThrough();
  return {
    paymentId,
    out,
    sent: '',
    heartbeat: setInterval(() => {
      if (!out.writableEnded) out.write(':\n\n');
    }, limits.heartbeatMs),
    lifetime: setTimeout(() => out.end(), limits.lifetimeMs),
  };
}

/** A place taken for one stream: opened once, or given back once if it is not used. */
function reservation(
  open: (paymentId: string, first: CheckoutStatusBody) => Readable,
  giveBack: () => void,
): { open(paymentId: string, first: CheckoutStatusBody): Readable; release(): void } {
  let used = false;
  return {
    open(paymentId, first) {
      used = true;
      return open(paymentId, first);
    },
    release() {
      if (!used) giveBack();
      used = true;
    },
  };
}
