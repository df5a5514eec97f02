import { type Selectable, sql } from 'kysely';
import { newId } from '../../domain/ids.ts';
import type { Db, EventRow } from '../database.ts';
import type { AttemptTrigger, EventDeliveriesTable, WebhookAttemptsTable } from '../tables/webhooks.ts';
import { FIRST_PAGE, fromCursor, type Keyset, keysetIn, type Page, type PageRequest, readPage } from '../pagination.ts';
import { findScoped } from './scoped.ts';
import type { EventType } from '../../webhooks/event-types.ts';

export type EventDeliveryRow = Selectable<EventDeliveriesTable>;
export type WebhookAttemptRow = Selectable<WebhookAttemptsTable>;

/**
 * The delivery state of a new event, one row per target. insertEvent calls it in the transaction
 * that writes the event, so an event with a target is never committed without what delivers it.
 */
export async function insertEventDeliveries(
  db: Db,
  rows: {
    eventId: string;
    accountId: string;
    livemode: boolean;
    /** One per target: an account endpoint's id, or null for the event's own webhook_url. */
    endpointIds: readonly (string | null)[];
    nextAttemptAt: Date;
  },
): Promise<void> {
  await db
    .insertInto('event_deliveries')
    .values(
      rows.endpointIds.map((endpointId) => ({
        id: newId('evd'),
        event_id: rows.eventId,
        endpoint_id: endpointId,
        account_id: rows.accountId,
        livemode: rows.livemode,
        next_attempt_at: rows.nextAttemptAt,
        created_at: rows.nextAttemptAt,
        updated_at: rows.nextAttemptAt,
      })),
    )
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
  deliveryId: string;
  eventId: string;
  /** The account endpoint it goes to; null: the event's webhook_url, signed with the account's secrets. */
  endpointId: string | null;
  /** The endpoint's sealed secret, which signs its deliveries; null for the webhook_url target. */
  endpointSecretCiphertext: string | null;
  accountId: string;
  livemode: boolean;
  type: EventType;
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

/**
 * Why a due delivery was ended without an attempt: it ran out of attempts without a recorded
 * result (crashes), or its target is gone (the endpoint was disabled or deleted, or the event has
 * no webhook_url).
 */
export type EndReason = 'attempts_exhausted' | 'target_gone';

export interface ClaimResult {
  claimed: ClaimedDelivery[];
  /** Deliveries marked failed without an attempt. */
  ended: Array<{ deliveryId: string; eventId: string; reason: EndReason }>;
}

/**
 * Leases due deliveries for one attempt each. Run it inside a transaction: the rows are locked
 * with FOR UPDATE SKIP LOCKED, so concurrent workers take disjoint sets, and the claim (attempt
 * row + lease) commits before any HTTP request is made. A worker that dies after the commit
 * leaves an attempt without outcome and a lease that expires, so the event is sent again.
 * The target is resolved here, per delivery: an endpoint's current URL and secret (so an edited
 * URL applies to the retries still due), or the event's webhook_url.
 */
export async function claimDueDeliveries(trx: Db, options: ClaimOptions): Promise<ClaimResult> {
  const { now, accountIds } = options;
  if (accountIds !== undefined && accountIds.length === 0) return { claimed: [], ended: [] };
  let query = trx
    .selectFrom('event_deliveries as d')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .leftJoin('webhook_endpoints as w', 'w.id', 'd.endpoint_id')
    .select([
      'd.id',
      'd.event_id',
      'd.endpoint_id',
      'd.account_id',
      'd.livemode',
      'd.attempt_count',
      'd.round_attempts',
      'd.redelivery_requested',
      'e.type',
      'e.created_at',
      'e.webhook_url',
      'w.url as endpoint_url',
      'w.secret_ciphertext as endpoint_secret_ciphertext',
      'w.disabled as endpoint_disabled',
      'w.deleted_at as endpoint_deleted_at',
      sql<string>`e.data::text`.as('data_text'),
    ])
    .where('d.status', '=', 'pending')
    .where('d.next_attempt_at', '<=', now);
  if (accountIds !== undefined) query = query.where('d.account_id', 'in', accountIds);
  const due = await query.orderBy('d.next_attempt_at').limit(options.limit).forUpdate('d').skipLocked().execute();

  const claimed: ClaimedDelivery[] = [];
  const ended: ClaimResult['ended'] = [];
  const leaseUntil = new Date(now.getTime() + options.leaseMs);
  for (const row of due) {
    const live = row.endpoint_disabled === false && row.endpoint_deleted_at === null;
    const url = row.endpoint_id === null ? row.webhook_url : live ? row.endpoint_url : null;
    if (url === null || row.round_attempts >= options.maxAttempts) {
      ended.push({
        deliveryId: row.id,
        eventId: row.event_id,
        reason: url === null ? 'target_gone' : 'attempts_exhausted',
      });
      await trx
        .updateTable('event_deliveries')
        .set({ status: 'failed', failed_at: now, leased_attempt_id: null, updated_at: now })
        .where('id', '=', row.id)
        .execute();
      continue;
    }
    const attempt: ClaimedDelivery = {
      attemptId: newId('del'),
      attemptNumber: row.attempt_count + 1,
      roundAttempt: row.round_attempts + 1,
      trigger: row.redelivery_requested ? 'redelivery' : 'automatic',
      deliveryId: row.id,
      eventId: row.event_id,
      endpointId: row.endpoint_id,
      endpointSecretCiphertext: row.endpoint_id === null ? null : row.endpoint_secret_ciphertext,
      accountId: row.account_id,
      livemode: row.livemode,
      type: row.type,
      eventCreatedAt: row.created_at,
      dataText: row.data_text,
      url,
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
      .where('id', '=', row.id)
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
          delivery_id: a.deliveryId,
          attempt_number: a.attemptNumber,
          trigger: a.trigger,
          url: a.url,
          started_at: now,
        })),
      )
      .execute();
  }
  return { claimed, ended };
}

export interface AttemptResult {
  attemptId: string;
  deliveryId: string;
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
 * Records how an attempt ended and moves the delivery on. A success marks the delivery delivered
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
      .where('id', '=', result.deliveryId)
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
    .where('id', '=', result.deliveryId)
    .where('status', '=', 'pending')
    .where('leased_attempt_id', '=', result.attemptId)
    .execute();
}

export interface EventWithDeliveries {
  event: EventRow;
  /** One per target: the webhook_url's (endpoint_id null) and each account endpoint's. */
  deliveries: EventDeliveryRow[];
}

export interface EventScope {
  accountId: string;
  livemode: boolean;
}

async function deliveriesOf(db: Db, eventIds: readonly string[]): Promise<EventDeliveryRow[]> {
  if (eventIds.length === 0) return [];
  return db
    .selectFrom('event_deliveries')
    .selectAll()
    .where('event_id', 'in', eventIds)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** An event as its owner sees it: another account's or the other mode's event does not exist. */
export async function findEventWithDeliveries(
  db: Db,
  scope: EventScope,
  id: string,
): Promise<EventWithDeliveries | undefined> {
  const event = await findScoped(db, 'events', scope, id);
  if (!event) return undefined;
  return { event, deliveries: await deliveriesOf(db, [id]) };
}

export interface EventFilter {
  type?: string | undefined;
  objectId?: string | undefined;
  createdGte?: Date | undefined;
  createdLte?: Date | undefined;
}

export interface EventListFilter extends EventScope, EventFilter {
  /** Where the page starts and which way it runs (db/pagination.ts); the first page by default. */
  keyset?: Keyset | undefined;
  limit: number;
}

function eventsOf(db: Db, scope: EventScope, f: EventFilter) {
  let query = db
    .selectFrom('events')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode);
  // A filter is any text (an unknown type matches nothing); stored types are the catalogue's.
  if (f.type) query = query.where('type', '=', f.type as EventType);
  if (f.objectId) query = query.where('object_id', '=', f.objectId);
  if (f.createdGte) query = query.where('created_at', '>=', f.createdGte);
  if (f.createdLte) query = query.where('created_at', '<=', f.createdLte);
  return query;
}

async function withDeliveries(db: Db, events: EventRow[]): Promise<EventWithDeliveries[]> {
  const deliveries = await deliveriesOf(
    db,
    events.map((e) => e.id),
  );
  return events.map((event) => ({ event, deliveries: deliveries.filter((d) => d.event_id === event.id) }));
}

/** `limit` of the caller's events from the keyset's cursor, in keyset order, each with its deliveries. */
export async function listEventsWithDeliveries(db: Db, f: EventListFilter): Promise<EventWithDeliveries[]> {
  return withDeliveries(db, await fromCursor(eventsOf(db, f, f), f.keyset ?? FIRST_PAGE, f.limit).execute());
}

/** One page of the caller's events, newest first, each with its deliveries (the dashboard's Webhooks screen). */
export async function listEventsWithDeliveriesPage(
  db: Db,
  scope: EventScope,
  filter: EventFilter,
  page: PageRequest,
): Promise<Page<EventWithDeliveries>> {
  const keyset = await keysetIn(db, 'events', scope, page, 'event');
  const events = await readPage(eventsOf(db, scope, filter), keyset, page.limit);
  return { data: await withDeliveries(db, events.data), has_more: events.has_more };
}

/** Every attempt at an event, to every target, in the order they were made. */
export async function listAttempts(db: Db, eventId: string): Promise<WebhookAttemptRow[]> {
  return db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('event_id', '=', eventId)
    .orderBy('started_at')
    .orderBy('attempt_number')
    .orderBy('id')
    .execute();
}

/**
 * Queues an event for another round of attempts, now, to each target it still has (a disabled or
 * deleted endpoint is left alone). An attempt already in flight is left to finish (its lease is
 * live): that is a delivery in progress, not something to duplicate. Returns the event's
 * deliveries as they now stand; none when the event was recorded only.
 */
export async function requestRedelivery(db: Db, eventId: string, now: Date): Promise<EventDeliveryRow[]> {
  await db
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
    .where((eb) =>
      eb.or([
        eb('endpoint_id', 'is', null),
        eb(
          'endpoint_id',
          'in',
          eb.selectFrom('webhook_endpoints').select('id').where('disabled', '=', false).where('deleted_at', 'is', null),
        ),
      ]),
    )
    .execute();
  return deliveriesOf(db, [eventId]);
}

/** When the next pending delivery (of these accounts, when named) falls due, leases included; null when none. */
export async function nextPendingDeliveryAt(db: Db, accountIds: readonly string[] | undefined): Promise<Date | null> {
  let query = db
    .selectFrom('event_deliveries')
    .select('next_attempt_at')
    .where('status', '=', 'pending')
    .orderBy('next_attempt_at')
    .limit(1);
  if (accountIds !== undefined) query = query.where('account_id', 'in', accountIds);
  return (await query.executeTakeFirst())?.next_attempt_at ?? null;
}

/** Pending deliveries due by `now` and not yet due, and when the oldest was written (the metrics' scrape). */
export function countPendingDeliveries(db: Db, now: Date) {
  return db
    .selectFrom('event_deliveries')
    .select((eb) => [
      eb.fn.countAll().filterWhere('next_attempt_at', '<=', now).as('due'),
      eb.fn.countAll().filterWhere('next_attempt_at', '>', now).as('waiting'),
      eb.fn.min('created_at').as('oldest'),
    ])
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
}
