import type { Insertable } from 'kysely';
import type { Db } from '../database.ts';
import type { AgentRunMessageRow, AgentRunMessagesTable } from '../tables/money.ts';

// The turns of an agent run's conversation after its first instruction. src/agent/runtime.ts
// writes them, in the transaction that records the turn.

/** Every turn of a run's conversation, in order. */
export function listRunMessages(db: Db, runId: string): Promise<AgentRunMessageRow[]> {
  return db.selectFrom('agent_run_messages').selectAll().where('run_id', '=', runId).orderBy('seq').execute();
}

/** When the merchant last answered the run; undefined when they never have. */
export async function lastAnswerAt(db: Db, runId: string): Promise<Date | undefined> {
  const answered = await db
    .selectFrom('agent_run_messages')
    .select('created_at')
    .where('run_id', '=', runId)
    .where('role', '=', 'merchant')
    .orderBy('seq', 'desc')
    .limit(1)
    .executeTakeFirst();
  return answered?.created_at;
}

/** The answer sent to this run with this idempotency key, if one was. */
export function findAnswerByIdempotencyKey(
  db: Db,
  runId: string,
  idempotencyKey: string,
): Promise<AgentRunMessageRow | undefined> {
  return db
    .selectFrom('agent_run_messages')
    .selectAll()
    .where('run_id', '=', runId)
    .where('idempotency_key', '=', idempotencyKey)
    .executeTakeFirst();
}

/** The run's last turn number (0 before any). */
export async function lastMessageSeq(db: Db, runId: string): Promise<number> {
  const last = await db
    .selectFrom('agent_run_messages')
    .select((eb) => eb.fn.max('seq').as('seq'))
    .where('run_id', '=', runId)
    .executeTakeFirst();
  return Number(last?.seq ?? 0);
}

export async function insertRunMessage(db: Db, message: Insertable<AgentRunMessagesTable>): Promise<void> {
  await db.insertInto('agent_run_messages').values(message).execute();
}
