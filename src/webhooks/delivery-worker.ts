// The webhook delivery worker. It drains the outbox's delivery rows (event_deliveries, written with
// each event, one per target: the payment's webhook_url and each subscribed account endpoint):
// claim due rows with FOR UPDATE SKIP LOCKED and a lease, commit, sign with the target's secret,
// POST outside any transaction, record the attempt. Any number of workers, in any number of
// processes, share the table. Delivery is at least once: an attempt cut short by a crash leaves a lease that expires,
// and the event is sent again with the same id, which receivers dedupe on.

import type { Kysely } from 'kysely';
import type { Config } from '../config/config.ts';
import type { Clock } from '../core/clock.ts';
import type { Logger } from '../core/logger.ts';
import type { SecretBox } from '../core/secret-box.ts';
import type { Database } from '../db/database.ts';
import {
  type ClaimedDelivery,
  claimDueDeliveries,
  nextPendingDeliveryAt,
  recordAttemptResult,
} from '../db/repositories/webhook-deliveries.ts';
import { NOTIFICATION_CHANNELS, type Notifications } from '../db/notifications.ts';
import { recordWebhookDelivery } from '../metrics/metrics.ts';
import { passFailures, SAFETY_POLL_MS, untilDue, wakeOnNotifications, wakeup } from '../worker-job.ts';
import { type DeliveryResult, postWebhook, WEBHOOK_TIMEOUT_MS } from './deliver.ts';
import { serializeEventBody } from './events.ts';
import { deliverySecrets } from './secrets.ts';
import { signWebhook } from './signer.ts';
import type { HostLookup } from './ssrf-guard.ts';

/**
 * What the delivery worker uses: the outbox it drains (db) and the notifications that wake it, the
 * clock, a logger, the secret box that opens endpoint secrets, and whether private addresses may be
 * posted to (config). The worker role hands in its Runtime, which is one.
 */
export interface DeliveryWorkerServices {
  config: Config;
  db: Kysely<Database>;
  notifications: Notifications;
  clock: Clock;
  logger: Logger;
  secretBox: SecretBox;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * Waits after each failed attempt of a round: the first attempt is immediate, then 5 s, 5 min,
 * 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 20 h, each ±10 % jitter: 10 attempts over about 3 days
 * (71 h 35 min without jitter). After the 10th failure the event is `failed`; it can be sent
 * again with POST /v1/events/:id/redeliver. Documented in docs/webhooks.md.
 */
export const RETRY_SCHEDULE_MS: readonly number[] = [
  5 * SECOND,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  5 * HOUR,
  10 * HOUR,
  14 * HOUR,
  20 * HOUR,
  20 * HOUR,
];
export const RETRY_JITTER = 0.1;
/** A receiver's Retry-After is honoured up to this long (a typo'd year must not park an event). */
export const MAX_RETRY_AFTER_MS = 24 * HOUR;

/**
 * The wait after the `failedAttempt`-th failed attempt of a round (1-based), with jitter; null
 * when the schedule is exhausted. A Retry-After longer than the scheduled wait replaces it.
 */
export function nextRetryDelayMs(
  failedAttempt: number,
  options: { schedule?: readonly number[]; jitter?: number; random?: () => number; retryAfterMs?: number | null } = {},
): number | null {
  const schedule = options.schedule ?? RETRY_SCHEDULE_MS;
  const base = schedule[failedAttempt - 1];
  if (base === undefined) return null;
  const jitter = options.jitter ?? RETRY_JITTER;
  const random = options.random ?? Math.random;
  const jittered = Math.round(base * (1 - jitter + 2 * jitter * random()));
  const retryAfter = Math.min(options.retryAfterMs ?? 0, MAX_RETRY_AFTER_MS);
  return Math.max(jittered, retryAfter);
}

export interface DeliveryWorkerOptions {
  /**
   * The longest an idle worker sleeps. It wakes when a delivery is written or brought forward
   * (NOTIFICATION_CHANNELS.deliveries) and when the next one it knows of falls due; this bounds
   * how late a delivery is if a notification is lost. Default SAFETY_POLL_MS.
   */
  pollIntervalMs?: number;
  /** Attempts in flight at once, per worker. */
  concurrency?: number;
  /** Per attempt, DNS to response headers. */
  timeoutMs?: number;
  /** How long a claim holds an event; must outlast an attempt. Default: timeout + 5 s. */
  leaseMs?: number;
  schedule?: readonly number[];
  jitter?: number;
  random?: () => number;
  /** Defaults to config.webhookAllowPrivate (WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate?: boolean;
  /** DNS for the connect-time check; the system resolver by default. */
  lookup?: HostLookup;
  /** Only deliver these accounts' events; all when unset. Lets a test count only its own deliveries. */
  accountIds?: readonly string[];
}

interface Settings {
  pollIntervalMs: number;
  concurrency: number;
  timeoutMs: number;
  leaseMs: number;
  schedule: readonly number[];
  jitter: number;
  random: () => number;
  allowPrivate: boolean;
  lookup: HostLookup | undefined;
  accountIds: readonly string[] | undefined;
}

function settings(services: DeliveryWorkerServices, options: DeliveryWorkerOptions): Settings {
  const timeoutMs = options.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
  return {
    pollIntervalMs: options.pollIntervalMs ?? SAFETY_POLL_MS,
    concurrency: options.concurrency ?? 16,
    timeoutMs,
    leaseMs: options.leaseMs ?? timeoutMs + 5 * SECOND,
    schedule: options.schedule ?? RETRY_SCHEDULE_MS,
    jitter: options.jitter ?? RETRY_JITTER,
    random: options.random ?? Math.random,
    allowPrivate: options.allowPrivate ?? services.config.webhookAllowPrivate,
    lookup: options.lookup,
    accountIds: options.accountIds,
  };
}

async function claim(services: DeliveryWorkerServices, s: Settings, limit: number): Promise<ClaimedDelivery[]> {
  const now = services.clock.now();
  const result = await services.db.transaction().execute((trx) =>
    claimDueDeliveries(trx, {
      now,
      limit,
      leaseMs: s.leaseMs,
      maxAttempts: s.schedule.length + 1,
      accountIds: s.accountIds,
    }),
  );
  for (const { deliveryId, eventId, reason } of result.ended) {
    services.logger.warn(
      { eventId, deliveryId, reason },
      reason === 'target_gone'
        ? 'webhook delivery dropped: its endpoint was disabled or deleted'
        : 'webhook delivery failed: attempts exhausted without a recorded result',
    );
  }
  return result.claimed;
}

async function attempt(services: DeliveryWorkerServices, s: Settings, job: ClaimedDelivery): Promise<void> {
  const now = services.clock.now();
  let result: DeliveryResult;
  try {
    const secrets = await deliverySecrets(services.db, services.secretBox, job, now);
    if (secrets.length === 0) throw new Error('the account has no webhook signing secret');
    const body = serializeEventBody({
      id: job.eventId,
      type: job.type,
      createdAt: job.eventCreatedAt,
      livemode: job.livemode,
      dataText: job.dataText,
    });
    const headers = signWebhook({ id: job.eventId, timestamp: Math.floor(now.getTime() / 1000), body, secrets });
    result = await postWebhook({
      url: job.url,
      body,
      headers,
      timeoutMs: s.timeoutMs,
      allowPrivate: s.allowPrivate,
      now: () => services.clock.now(),
      ...(s.lookup ? { lookup: s.lookup } : {}),
    });
  } catch (error) {
    // Nothing was sent: an unsigned or unreadable delivery is never attempted.
    services.logger.error({ err: error, eventId: job.eventId }, 'webhook could not be signed');
    result = {
      ok: false,
      status: null,
      latencyMs: 0,
      responseExcerpt: null,
      errorCode: 'signing_failed',
      errorMessage: 'the event could not be signed; nothing was sent',
      retryAfterMs: null,
    };
  }

  recordWebhookDelivery(
    result.ok ? 'delivered' : (result.errorCode ?? 'http_status'),
    result.errorCode === 'signing_failed' ? undefined : result.latencyMs / 1000,
  );
  const finishedAt = services.clock.now();
  const delay = result.ok
    ? null
    : nextRetryDelayMs(job.roundAttempt, {
        schedule: s.schedule,
        jitter: s.jitter,
        random: s.random,
        retryAfterMs: result.retryAfterMs,
      });
  await services.db.transaction().execute((trx) =>
    recordAttemptResult(trx, {
      attemptId: job.attemptId,
      deliveryId: job.deliveryId,
      finishedAt,
      outcome: result.ok ? 'succeeded' : 'failed',
      responseStatus: result.status,
      latencyMs: result.latencyMs,
      responseExcerpt: result.responseExcerpt,
      errorCode: result.errorCode,
      errorMessage: result.errorMessage,
      retryAt: delay === null ? null : new Date(finishedAt.getTime() + delay),
    }),
  );
  if (!result.ok) {
    // The origin only: a path or query string may carry the merchant's own tokens.
    services.logger.warn(
      {
        eventId: job.eventId,
        endpointId: job.endpointId,
        attempt: job.attemptNumber,
        target: safeOrigin(job.url),
        status: result.status,
        error: result.errorCode,
        retryInMs: delay,
      },
      delay === null ? 'webhook delivery failed for good' : 'webhook delivery attempt failed',
    );
  }
}

function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'invalid';
  }
}

/**
 * One pass: claims up to `concurrency` due deliveries, attempts them in parallel and records the
 * results. Returns how many were attempted. Tests use it to step the worker deterministically.
 */
export async function runDeliveryBatch(
  services: DeliveryWorkerServices,
  options: DeliveryWorkerOptions = {},
): Promise<number> {
  const s = settings(services, options);
  const jobs = await claim(services, s, s.concurrency);
  await Promise.all(jobs.map((job) => attempt(services, s, job)));
  return jobs.length;
}

const MIN_IDLE_MS = 50;

/** When the next pending delivery (of these accounts) falls due, leases included; null when none. */
async function nextDue(services: DeliveryWorkerServices, s: Settings): Promise<Date | null> {
  if (s.accountIds !== undefined && s.accountIds.length === 0) return null;
  return nextPendingDeliveryAt(services.db, s.accountIds);
}

/**
 * Runs the worker until the returned stop() is called: keeps up to `concurrency` attempts in
 * flight and claims more as slots free. With nothing due it sleeps until the next delivery falls
 * due (a retry, a lapsed lease), a notification says one was written, or pollIntervalMs passes.
 * stop() lets the attempts in flight finish and record (at most the timeout).
 */
export function startDeliveryWorker(
  services: DeliveryWorkerServices,
  options: DeliveryWorkerOptions = {},
): () => Promise<void> {
  const s = settings(services, options);
  const inFlight = new Set<Promise<void>>();
  let stopping = false;
  const sleeper = wakeup();
  const unlisten = wakeOnNotifications(
    services,
    'webhook-delivery',
    [{ channel: NOTIFICATION_CHANNELS.deliveries }],
    sleeper.wake,
  );

  // A claim that fails (the database down) backs off, doubling from 2 × MIN_IDLE_MS up to 10 s,
  // logged once per outage.
  const claimFailures = passFailures('webhook-delivery', Math.min(MIN_IDLE_MS, s.pollIntervalMs), services.logger);
  const loop = (async () => {
    while (!stopping) {
      const free = s.concurrency - inFlight.size;
      let claimed = 0;
      let idleMs = s.pollIntervalMs;
      if (free > 0) {
        try {
          const jobs = await claim(services, s, free);
          claimFailures.succeeded();
          claimed = jobs.length;
          for (const job of jobs) {
            const running: Promise<void> = attempt(services, s, job)
              .catch((error: unknown) =>
                // The lease expires and another pass retries; nothing is lost.
                services.logger.error({ err: error, eventId: job.eventId }, 'webhook attempt could not be recorded'),
              )
              .finally(() => {
                inFlight.delete(running);
                sleeper.wake();
              });
            inFlight.add(running);
          }
          // Nothing due now: sleep until the next one is (an attempt ending wakes it too); at least a
          // moment, so that a due row another worker holds locked does not make this one spin.
          if (claimed === 0) {
            const due = untilDue(await nextDue(services, s), services.clock.now(), s.pollIntervalMs);
            idleMs = Math.max(Math.min(MIN_IDLE_MS, s.pollIntervalMs), due);
          }
        } catch (error) {
          idleMs = claimFailures.failed(error);
        }
      }
      if (stopping) break;
      if (claimed === 0 || inFlight.size >= s.concurrency) await sleeper.sleep(idleMs);
    }
    await Promise.allSettled([...inFlight]);
    await unlisten();
  })();

  return async () => {
    stopping = true;
    sleeper.wake();
    await loop;
  };
}

/** The worker-role job (src/workers.ts). */
export function webhookDeliveryJob(runtime: DeliveryWorkerServices): () => Promise<void> {
  return startDeliveryWorker(runtime);
}
