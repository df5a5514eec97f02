import type { Db } from '../database.ts';
import type { RailEventKind, RailName } from '../tables/rails.ts';
import { newId } from '../../domain/ids.ts';

/** One line of what happened at the edge, for finance (the payment's page) and forensics. */
export async function recordRailEvent(
  db: Db,
  rail: RailName,
  attempt: { id: string; payment_id: string } | null,
  kind: RailEventKind,
  verdict: string,
  detail: string,
  at: Date,
): Promise<void> {
  await db
    .insertInto('rail_events')
    .values({
      id: newId('rev'),
      rail,
      attempt_id: attempt?.id ?? null,
      payment_id: attempt?.payment_id ?? null,
      kind,
      verdict,
      detail: detail.slice(0, 1000),
      created_at: at,
    })
    .execute();
}
