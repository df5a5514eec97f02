// Server-side prepared statements for the few statements on a hot path. Planning, not executing, is
// most of what Postgres spends on a statement like the payment insert with its idempotency claim
// (three tables, a CTE, an insert-select): pgbench gave 2,800 statements a second sent as text and
// 6,300 prepared; on PGlite the same statement took 1.3 ms and 0.5 ms. A statement opts in by
// starting with PREPARED; both dialects (connect.ts for pg, pglite-dialect.ts) then parse it once
// per connection under a name derived from its text and send only its parameters afterwards.
// Every other statement is sent as before: preparing all of them would keep a plan per distinct
// text on every connection for as long as it lives. Behind a pooler in transaction mode (PgBouncer
// before 1.21, Supavisor), where a session's prepared statements do not follow the client, set
// DATABASE_PREPARED_STATEMENTS=false. A marked statement without parameters is prepared on
// Postgres only (PGlite sends those through its simple protocol, which migrations need).

/** The opening of a statement's text that asks for it to be prepared. */
export const PREPARED = '/* prepared */ ';

/** Distinct texts that get a name; a text past them is sent unprepared (a shape built per call). */
const MAX_PREPARED_TEXTS = 100;

const names = new Map<string, string>();
/** Bumped when a prepared statement was lost, so that every connection parses its text again under a new name. */
let generation = 0;

/** The name to prepare `text` under, or undefined to send it as text (not marked, or too many). */
export function preparedName(text: string): string | undefined {
  if (!text.startsWith(PREPARED)) return undefined;
  let name = names.get(text);
  if (name === undefined) {
    if (names.size >= MAX_PREPARED_TEXTS) return undefined;
    name = `plainpay_${generation}_${names.size}`;
    names.set(text, name);
  }
  return name;
}

/**
 * A prepared statement this process named can no longer be used on its session, and the call can
 * be sent again as text: its plan went stale (0A000 from RevalidateCachedQuery: a migration by a
 * newer process changed the columns a `returning *` reads), or the session lost it (26000: a
 * `DEALLOCATE ALL` or `DISCARD ALL`; a pooler that moved us to another server session). Raised at
 * Bind, before anything runs, so sending it again cannot write twice. The next use parses it
 * again under a new name.
 */
export function isLostPreparedStatement(error: unknown): boolean {
  const { code, routine } = (error ?? {}) as { code?: unknown; routine?: unknown };
  return (code === '0A000' && routine === 'RevalidateCachedQuery') || code === '26000';
}

export function forgetPreparedNames(): void {
  names.clear();
  generation += 1;
}

/** A statement's text without the PREPARED mark, for whoever reads its first word. */
export function unmarked(text: string): string {
  return text.startsWith(PREPARED) ? text.slice(PREPARED.length) : text;
}

/**
 * Makes a pooled pg client send marked statements by name (pg parses a name once per connection
 * and afterwards sends only Bind and Execute). Kysely calls `client.query(text, values)`; any other
 * call passes through untouched. A statement lost to its session is sent again as text when the
 * session is outside a transaction; inside one, the transaction is already aborted, so the error
 * goes to the caller as it came.
 */
export function prepareMarkedStatements(client: { query: unknown; getTransactionStatus?: () => string | null }): void {
  const query = client.query as (...args: unknown[]) => Promise<unknown>;
  client.query = function (this: unknown, ...args: unknown[]): Promise<unknown> {
    const [text, values] = args;
    const name =
      args.length === 2 && typeof text === 'string' && Array.isArray(values) ? preparedName(text) : undefined;
    if (name === undefined) return query.apply(this, args);
    return query.call(this, { name, text, values }).catch((error: unknown) => {
      if (!isLostPreparedStatement(error)) throw error;
      forgetPreparedNames();
      // 'I': idle, outside a transaction block (the ReadyForQuery status after the failed call).
      if (client.getTransactionStatus?.() !== 'I') throw error;
      return query.apply(this, args);
    });
  };
}
