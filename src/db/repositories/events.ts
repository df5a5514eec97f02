import { stringifyJson } from '../../core/json-text.ts';
import type { Db, EventRow } from '../database.ts';
import { newId } from '../../domain/ids.ts';
import type { EventType } from '../../webhooks/event-types.ts';
import { insertEventDeliveries } from './webhook-deliveries.ts';
import { listSubscribedEndpointIds } from './webhook-endpoints.ts';

export interface NewEvent {
  accountId: string;
  livemode: boolean;
  type: EventType;
  objectId: string | null;
  /** The event's `data` object, as it will be delivered. */
  data: unknown;
  /**
   * The object's own delivery target (a payment's webhook_url), or null. The account's endpoints
   * that subscribe to the type are targets too; an event with neither is recorded only.
   */
  webhookUrl: string | null;
  createdAt: Date;
}

/**
 * Writes an event to the outbox. Call it inside the transaction of the state change it
 * announces: the event exists if and only if the change committed.
 */
export async function insertEvent(db: Db, event: NewEvent): Promise<EventRow> {
  const row = await db
    .insertInto('events')
    .values({
      id: newId('evt'),
      account_id: event.accountId,
      livemode: event.livemode,
      type: event.type,
      object_id: event.objectId,
      data: stringifyJson(event.data),
      webhook_url: event.webhookUrl,
      created_at: event.createdAt,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  // Same transaction: an event commits together with one delivery per target, so no target can
  // miss an event that committed.
  const endpointIds = await listSubscribedEndpointIds(db, event, event.type);
  const targets = [...(row.webhook_url === null ? [] : [null]), ...endpointIds];
  if (targets.length > 0) {
    await insertEventDeliveries(db, {
      eventId: row.id,
      accountId: row.account_id,
      livemode: row.livemode,
      endpointIds: targets,
      nextAttemptAt: event.createdAt,
    });
  }
  return row;
}

export async function listEventsForObject(db: Db, objectId: string): Promise<EventRow[]> {
  return db
    .selectFrom('events')
    .selectAll()
    .where('object_id', '=', objectId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}
