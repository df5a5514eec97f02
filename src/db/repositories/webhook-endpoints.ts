import { type Selectable, sql } from 'kysely';
import type { Db, ModeScope } from '../database.ts';
import { FIRST_PAGE, fromCursor, type Keyset } from '../pagination.ts';
import type { WebhookEndpointsTable } from '../tables/webhooks.ts';
import { scopedRow } from './scoped.ts';

// An account's webhook endpoints, per mode. A deleted endpoint keeps its row (its deliveries and
// attempts refer to it) but is gone for every read here.

export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;

export async function insertWebhookEndpoint(
  db: Db,
  row: ModeScope & {
    id: string;
    url: string;
    enabledEvents: readonly string[];
    description: string | null;
    disabled: boolean;
    secretCiphertext: string;
    now: Date;
  },
): Promise<WebhookEndpointRow> {
  return db
    .insertInto('webhook_endpoints')
    .values({
      id: row.id,
      account_id: row.accountId,
      livemode: row.livemode,
      url: row.url,
      enabled_events: [...row.enabledEvents],
      description: row.description,
      disabled: row.disabled,
      secret_ciphertext: row.secretCiphertext,
      created_at: row.now,
      updated_at: row.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findWebhookEndpoint(
  db: Db,
  scope: ModeScope,
  id: string,
): Promise<WebhookEndpointRow | undefined> {
  return scopedRow(db, 'webhook_endpoints', scope, id).selectAll().where('deleted_at', 'is', null).executeTakeFirst();
}

/** The page of endpoints the keyset names, fetched `limit` at a time in keyset order (db/pagination.ts). */
export async function listWebhookEndpoints(
  db: Db,
  scope: ModeScope,
  page: { keyset?: Keyset | undefined; limit: number },
): Promise<WebhookEndpointRow[]> {
  const query = db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('deleted_at', 'is', null);
  return fromCursor(query, page.keyset ?? FIRST_PAGE, page.limit).execute();
}

export async function countWebhookEndpoints(db: Db, scope: ModeScope): Promise<number> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export interface WebhookEndpointPatch {
  url?: string | undefined;
  enabledEvents?: readonly string[] | undefined;
  description?: string | null | undefined;
  disabled?: boolean | undefined;
}

export async function updateWebhookEndpoint(
  db: Db,
  scope: ModeScope,
  id: string,
  patch: WebhookEndpointPatch,
  now: Date,
): Promise<WebhookEndpointRow | undefined> {
  return db
    .updateTable('webhook_endpoints')
    .set({
      ...(patch.url === undefined ? {} : { url: patch.url }),
      ...(patch.enabledEvents === undefined ? {} : { enabled_events: [...patch.enabledEvents] }),
      ...(patch.description === undefined ? {} : { description: patch.description }),
      ...(patch.disabled === undefined ? {} : { disabled: patch.disabled }),
      updated_at: now,
    })
    .where('id', '=', id)
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** Marks the endpoint deleted; true when it existed. Its pending deliveries end at their next claim. */
export async function deleteWebhookEndpoint(db: Db, scope: ModeScope, id: string, now: Date): Promise<boolean> {
  const deleted = await db
    .updateTable('webhook_endpoints')
    .set({ deleted_at: now, updated_at: now })
    .where('id', '=', id)
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('deleted_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return deleted !== undefined;
}

/** The enabled endpoints of the account and mode that subscribe to `type` (by name or with '*'). */
export async function listSubscribedEndpointIds(db: Db, scope: ModeScope, type: string): Promise<string[]> {
  const rows = await db
    .selectFrom('webhook_endpoints')
    .select('id')
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('disabled', '=', false)
    .where('deleted_at', 'is', null)
    .where(sql<boolean>`enabled_events && array[${type}, '*']::text[]`)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((row) => row.id);
}
