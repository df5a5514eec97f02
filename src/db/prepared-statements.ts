// Server-side prepared statements for the few statements on a hot path. Planning, not executing, is
// most of what Postgres spends on a statement like the payment insert with its idempotency claim
// (three tables, a CTE, an insert-select): pgbench gave 2,800 statements a second sent as text and
// 6,300 prepared; on PGlite the same statement took 1.3 ms and 0.5 ms. A statement opts in by
// starting with PREPARED; both dialects (connect.ts for pg, pglite-dialect.ts) then parse it once
// per connection under a name derived from its text and send only its parameters afterwards.
// Every other statement is sent as before: preparing all of them would keep a plan per distinct
// text on every connection for as long as it lives.

/** The opening of a statement's text that asks for it to be prepared. */
export const PREPARED = '/* prepared */ ';

/** Distinct texts that get a name; a text past them is sent unprepared (a shape built per call). */
const MAX_PREPARED_TEXTS = 100;

const names = new Map<string, string>();
/** Bumped when a plan went stale, so that every connection parses the text again under a new name. */
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
 * Postgres refuses to run a prepared statement whose result columns changed since it was parsed
 * (a migration by a newer process altered a table this one reads with `returning *`). The caller
 * sends the statement again as text, and the next use parses it again under a new name.
 */
export function isStalePlan(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === '0A000' && typeof message === 'string' && message.includes('cached plan');
}

export function forgetPreparedNames(): void {
  names.clear();
  generation += 1;
}

/**
 * Makes a pooled pg client send marked statements by name (pg parses a name once per connection
 * and afterwards sends only Bind and Execute). Kysely calls `client.query(text, values)`; any other
 * call passes through untouched.
 */
export function prepareMarkedStatements(client: { query: unknown }): void {
  const query = client.query as (...args: unknown[]) => Promise<unknown>;
  client.query = function (this: unknown, ...args: unknown[]): Promise<unknown> {
    const [text, values] = args;
    const name = args.length === 2 && typeof text === 'string' ? preparedName(text) : undefined;
    if (name === undefined) return query.apply(this, args);
    return query.call(this, { name, text, values }).catch((error: unknown) => {
      if (!isStalePlan(error)) throw error;
      forgetPreparedNames();
      return query.apply(this, args);
    });
  };
}
