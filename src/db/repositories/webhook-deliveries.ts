import { type Selectable, sql } from 'kysely';
import { newId } from '../../domain/ids.ts';
import type { Db, EventRow } from '../database.ts';
import type { AttemptTrigger, EventDeliveriesTable, WebhookAttemptsTable } from '../tables/webhooks.ts';
import { afterCursor } from '../pagination.ts';

export type EventDeliveryRow = Selectable<EventDeliveriesTable>;
export type WebhookAttemptRow = Selectable<WebhookAttemptsTable>;

/**
 * The delivery state of a new event. insertEvent calls it in the transaction that writes the
 * event, so an event with a webhook_url is never committed without something that delivers it.
 */
export async function insertEventDelivery(
  db: Db,
  row: { eventId: string; accountId: string; livemode: boolean; nextAttemptAt: Date },
): Promise<void> {
  await db
    .insertInto('event_deliveries')
    .values({
      event_id: row.eventId,
      account_id: row.accountId,
      livemode: row.livemode,
      next_attempt_at: row.nextAttemptAt,
      created_at: row.nextAttemptAt,
      updated_at: row.nextAttemptAt,
    })
    .execute();
}

/** One attempt a worker has taken on: the lease is held until it records the result. */
export interface ClaimedDelivery {
  attemptId: string;
  /** 1, 2, … over the event's life. */
  attemptNumber: number;
  /** 1, 2, … within the current round (a redelivery starts a new round); picks the backoff step. */
  roundAttempt: number;
  trigger: AttemptTrigger;
  eventId: string;
  accountId: string;
  livemode: boolean;
  type: string;
  eventCreatedAt: Date;
  /** The event's data exactly as stored (json text). */
  dataText: string;
  url: string;
}

export interface ClaimOptions {
  now: Date;
  limit: number;
  /** How long the claim holds the row; past it, another worker may take the event again. */
  leaseMs: number;
  /** Rounds stop after this many attempts; a row found past it (attempts cut short by crashes) fails. */
  maxAttempts: number;
  /** Only these accounts' events (tests sharing one database); every account when undefined. */
  accountIds?: readonly string[] | undefined;
}

export interface ClaimResult {
  claimed: ClaimedDelivery[];
  /** Events that ran out of attempts without a recorded result and were marked failed. */
  exhausted: string[];
}

/**
 * Leases due deliveries for one attempt each. Run it inside a transaction: the rows are locked
 * with FOR UPDATE SKIP LOCKED, so concurrent workers take disjoint sets, and the claim (attempt
 * row + lease) commits before any HTTP request is made. A worker that dies after the commit
 * leaves an attempt without outcome and a lease that expires, so the event is sent again.
 */
export async function claimDueDeliveries(trx: Db, options: ClaimOptions): Promise<ClaimResult> {
  const { now, accountIds } = options;
  if (accountIds !== undefined && accountIds.length === 0) return { claimed: [], exhausted: [] };
  let query = trx
    .selectFrom('event_deliveries as d')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .select([
      'd.event_id',
      'd.account_id',
      'd.livemode',
      'd.attempt_count',
      'd.round_attempts',
      'd.redelivery_requested',
      'e.type',
      'e.created_at',
      'e.webhook_url',
      sql<string>`e.data::text`.as('data_text'),
    ])
    .where('d.status', '=', 'pending')
    .where('d.next_attempt_at', '<=', now);
  if (accountIds !== undefined) query = query.where('d.account_id', 'in', accountIds);
  const due = await query.orderBy('d.next_attempt_at').limit(options.limit).forUpdate('d').skipLocked().execute();

  const claimed: ClaimedDelivery[] = [];
  const exhausted: string[] = [];
  const leaseUntil = new Date(now.getTime() + options.leaseMs);
  for (const row of due) {
    if (row.webhook_url === null || row.round_attempts >= options.maxAttempts) {
      exhausted.push(row.event_id);
      await trx
        .updateTable('event_deliveries')
        .set({ status: 'failed', failed_at: now, leased_attempt_id: null, updated_at: now })
        .where('event_id', '=', row.event_id)
        .execute();
      continue;
    }
    const attempt: ClaimedDelivery = {
      attemptId: newId('del'),
      attemptNumber: row.attempt_count + 1,
      roundAttempt: row.round_attempts + 1,
      trigger: row.redelivery_requested ? 'redelivery' : 'automatic',
      eventId: row.event_id,
      accountId: row.account_id,
      livemode: row.livemode,
      type: row.type,
      eventCreatedAt: row.created_at,
      dataText: row.data_text,
      url: row.webhook_url,
    };
    await trx
      .updateTable('event_deliveries')
      .set({
        attempt_count: attempt.attemptNumber,
        round_attempts: attempt.roundAttempt,
        next_attempt_at: leaseUntil,
        leased_attempt_id: attempt.attemptId,
        redelivery_requested: false,
        last_attempt_at: now,
        updated_at: now,
      })
      .where('event_id', '=', row.event_id)
      .execute();
    claimed.push(attempt);
  }
  if (claimed.length > 0) {
    await trx
      .insertInto('webhook_attempts')
      .values(
        claimed.map((a) => ({
          id: a.attemptId,
          event_id: a.eventId,
          attempt_number: a.attemptNumber,
          trigger: a.trigger,
          url: a.url,
          started_at: now,
        })),
      )
      .execute();
  }
  return { claimed, exhausted };
}

export interface AttemptResult {
  attemptId: string;
  eventId: string;
  finishedAt: Date;
  outcome: 'succeeded' | 'failed';
  responseStatus: number | null;
  latencyMs: number;
  responseExcerpt: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  /** After a failure: when to try again, or null when the round is over (the event fails). */
  retryAt: Date | null;
}

/**
 * Records how an attempt ended and moves the delivery on. A success marks the event delivered
 * whoever holds the lease now; a failure only reschedules if this attempt still holds the lease
 * (a slow attempt whose lease expired must not overwrite the state of the one that replaced it).
 */
export async function recordAttemptResult(trx: Db, result: AttemptResult): Promise<void> {
  await trx
    .updateTable('webhook_attempts')
    .set({
      finished_at: result.finishedAt,
      outcome: result.outcome,
      response_status: result.responseStatus,
      latency_ms: result.latencyMs,
      response_excerpt: result.responseExcerpt,
      error_code: result.errorCode,
      error_message: result.errorMessage,
    })
    .where('id', '=', result.attemptId)
    .execute();

  const at = result.finishedAt;
  if (result.outcome === 'succeeded') {
    await trx
      .updateTable('event_deliveries')
      .set({ status: 'delivered', delivered_at: at, leased_attempt_id: null, updated_at: at })
      .where('event_id', '=', result.eventId)
      .where('status', '=', 'pending')
      .execute();
    return;
  }
  await trx
    .updateTable('event_deliveries')
    .set(
      result.retryAt === null
        ? { status: 'failed', failed_at: at, leased_attempt_id: null, updated_at: at }
        : { next_attempt_at: result.retryAt, leased_attempt_id: null, updated_at: at },
    )
    .where('event_id', '=', result.eventId)
    .where('status', '=', 'pending')
    .where('leased_attempt_id', '=', result.attemptId)
    .execute();
}

export interface EventWithDelivery {
  event: EventRow;
  delivery: EventDeliveryRow | undefined;
}

export interface EventScope {
  accountId: string;
  livemode: boolean;
}

/** An event as its owner sees it: another account's or the other mode's event does not exist. */
export async function findEventWithDelivery(
  db: Db,
  scope: EventScope,
  id: string,
): Promise<EventWithDelivery | undefined> {
  const event = await db
    .selectFrom('events')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .executeTakeFirst();
  if (!event) return undefined;
  const delivery = await db.selectFrom('event_deliveries').selectAll().where('event_id', '=', id).executeTakeFirst();
  return { event, delivery };
}

export interface EventListFilter extends EventScope {
  type?: string | undefined;
  objectId?: string | undefined;
  /** Keyset cursor: rows strictly after this one in (created_at desc, id desc) order. */
  after?: { createdAt: Date; id: string } | undefined;
  limit: number;
}

export async function listEventsWithDelivery(db: Db, f: EventListFilter): Promise<EventWithDelivery[]> {
  let query = db
    .selectFrom('events')
    .selectAll()
    .where('account_id', '=', f.accountId)
    .where('livemode', '=', f.livemode);
  if (f.type) query = query.where('type', '=', f.type);
  if (f.objectId) query = query.where('object_id', '=', f.objectId);
  if (f.after) {
    query = query.where(afterCursor(f.after));
  }
  const events = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(f.limit).execute();
  if (events.length === 0) return [];
  const deliveries = await db
    .selectFrom('event_deliveries')
    .selectAll()
    .where(
      'event_id',
      'in',
      events.map((e) => e.id),
    )
    .execute();
  const byEvent = new Map(deliveries.map((d) => [d.event_id, d]));
  return events.map((event) => ({ event, delivery: byEvent.get(event.id) }));
}

/** Every attempt at an event, in the order they were made. */
export async function listAttempts(db: Db, eventId: string): Promise<WebhookAttemptRow[]> {
  return db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('event_id', '=', eventId)
    .orderBy('attempt_number')
    .execute();
}

/**
 * Queues an event for another round of attempts, now. An attempt already in flight is left to
 * finish (its lease is live): that is a delivery in progress, not something to duplicate.
 * Returns the delivery row as it now stands, or undefined when the event has no delivery.
 */
export async function requestRedelivery(db: Db, eventId: string, now: Date): Promise<EventDeliveryRow | undefined> {
  const updated = await db
    .updateTable('event_deliveries')
    .set({
      status: 'pending',
      round_attempts: 0,
      next_attempt_at: now,
      leased_attempt_id: null,
      redelivery_requested: true,
      failed_at: null,
      updated_at: now,
    })
    .where('event_id', '=', eventId)
    .where((eb) => eb.or([eb('leased_attempt_id', 'is', null), eb('next_attempt_at', '<=', now)]))
    .returningAll()
    .executeTakeFirst();
  if (updated) return updated;
  return db.selectFrom('event_deliveries').selectAll().where('event_id', '=', eventId).executeTakeFirst();
}
