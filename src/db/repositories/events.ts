import type { Db, EventRow } from '../database.ts';
import { newId } from '../../domain/ids.ts';
import { insertEventDelivery } from './webhook-deliveries.ts';

export interface NewEvent {
  accountId: string;
  livemode: boolean;
  type: string;
  objectId: string | null;
  /** The event's `data` object, as it will be delivered. */
  data: unknown;
  /** Delivery target, or null to record the event without delivering it. */
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
      data: JSON.stringify(event.data),
      webhook_url: event.webhookUrl,
      created_at: event.createdAt,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  // Same transaction: an event with a target commits together with what delivers it.
  if (row.webhook_url !== null) {
    await insertEventDelivery(db, {
      eventId: row.id,
      accountId: row.account_id,
      livemode: row.livemode,
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
