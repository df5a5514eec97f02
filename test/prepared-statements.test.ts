// Statements marked PREPARED (src/db/prepared-statements.ts) are parsed once per session and then
// sent by name, on Postgres (pg's named statements) and on PGlite (the dialect's own Parse/Bind).
// What must hold: the same rows and types as the text sent unmarked, errors as before with the
// session usable after, transactions as before, and a plan made stale by a schema change run again.

import { CompiledQuery, type Kysely, sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/database.ts';
import { PREPARED } from '../src/db/prepared-statements.ts';
import { connectDatabase } from '../src/db/connect.ts';
import { loadConfig } from '../src/config/config.ts';
import { fileDatabaseUrl, isPostgres, testDatabase } from './support/harness.ts';

type Db = Kysely<Database>;
const backend = isPostgres ? 'Postgres' : 'PGlite';

let db: Db;
beforeAll(async () => {
  db = (await testDatabase()).db;
  await sql`create table prepared_probe (id text primary key, n int8, doc json, at timestamptz, flag boolean)`.execute(
    db,
  );
});

const INSERT = `insert into prepared_probe (id, n, doc, at, flag) values ($1, $2, $3, $4, $5) returning *`;

/** The names of the statements prepared in the session `conn` runs on, for the marked texts. */
async function preparedHere(conn: Db): Promise<string[]> {
  const { rows } = await sql<{ statement: string }>`
    select statement from pg_prepared_statements where statement like ${`${PREPARED}%`}`.execute(conn);
  return rows.map((row) => row.statement);
}

describe(`prepared statements (${backend})`, () => {
  it('answers a marked statement as the same text unmarked, and parses it once per session', async () => {
    const at = new Date('2026-11-24T10:00:00.123Z');
    await db.connection().execute(async (conn) => {
      const marked = await conn.executeQuery(
        CompiledQuery.raw(`${PREPARED}${INSERT}`, ['a', 9007199254740993n, '{"order":"o_1","n":1.50}', at, true]),
      );
      const plain = await conn.executeQuery(
        CompiledQuery.raw(INSERT, ['b', 9007199254740993n, '{"order":"o_1","n":1.50}', at, true]),
      );
      expect(marked.rows).toEqual([{ ...(plain.rows[0] as object), id: 'a' }]);
      expect(marked.rows[0]).toMatchObject({ n: 9007199254740993n, at, flag: true });
      // Nulls go through as nulls.
      const nulls = await conn.executeQuery(CompiledQuery.raw(`${PREPARED}${INSERT}`, ['c', null, null, null, null]));
      expect(nulls.rows).toEqual([{ id: 'c', n: null, doc: null, at: null, flag: null }]);
      expect(await preparedHere(conn)).toEqual([`${PREPARED}${INSERT}`]);
    });
  });

  it('fails as the text would (a unique violation), and the session goes on', async () => {
    await db.connection().execute(async (conn) => {
      const again = conn.executeQuery(CompiledQuery.raw(`${PREPARED}${INSERT}`, ['a', 1n, null, null, false]));
      await expect(again).rejects.toMatchObject({ code: '23505' });
      const after = await conn.executeQuery(CompiledQuery.raw(`${PREPARED}${INSERT}`, ['d', 2n, null, null, false]));
      expect(after.rows).toMatchObject([{ id: 'd', n: 2n }]);
    });
  });

  it('takes part in a transaction: rolled back with it', async () => {
    await db
      .transaction()
      .execute(async (trx) => {
        await trx.executeQuery(CompiledQuery.raw(`${PREPARED}${INSERT}`, ['e', 3n, null, null, true]));
        throw new Error('roll back');
      })
      .catch(() => undefined);
    const { rows } = await sql`select id from prepared_probe where id = 'e'`.execute(db);
    expect(rows).toEqual([]);
  });

  it('runs a statement again as text when a schema change made its prepared plan stale', async () => {
    const select = `${PREPARED}select * from prepared_probe where id = $1`;
    await db.connection().execute(async (conn) => {
      const before = await conn.executeQuery(CompiledQuery.raw(select, ['a']));
      expect(Object.keys(before.rows[0] as object)).toEqual(['id', 'n', 'doc', 'at', 'flag']);
      await sql`alter table prepared_probe add column note text default 'added'`.execute(conn);
      const after = await conn.executeQuery(CompiledQuery.raw(select, ['a']));
      expect(after.rows).toMatchObject([{ id: 'a', note: 'added' }]);
      // And the next call prepares it afresh under another name, instead of failing each time.
      const next = await conn.executeQuery(CompiledQuery.raw(select, ['a']));
      expect(next.rows).toMatchObject([{ id: 'a', note: 'added' }]);
      expect(await preparedHere(conn)).toContain(select);
    });
  });

  it('inside a transaction, gives the stale plan error as it came (the transaction is aborted)', async () => {
    const select = `${PREPARED}select * from prepared_probe where id = $1 and $2::int = 2`;
    await db.connection().execute(async (conn) => {
      await conn.executeQuery(CompiledQuery.raw(select, ['a', 2]));
      await sql`alter table prepared_probe add column other text`.execute(conn);
      await sql`begin`.execute(conn);
      await expect(conn.executeQuery(CompiledQuery.raw(select, ['a', 2]))).rejects.toMatchObject({ code: '0A000' });
      await sql`rollback`.execute(conn);
      // Outside it again, the next call prepares it afresh.
      expect((await conn.executeQuery(CompiledQuery.raw(select, ['a', 2]))).rows).toHaveLength(1);
    });
  });

  it('sends a statement again as text when the session lost it (DEALLOCATE ALL)', async () => {
    const select = `${PREPARED}select id from prepared_probe where id = $1 and $2::int = 3`;
    await db.connection().execute(async (conn) => {
      await conn.executeQuery(CompiledQuery.raw(select, ['a', 3]));
      await sql`deallocate all`.execute(conn);
      expect((await conn.executeQuery(CompiledQuery.raw(select, ['a', 3]))).rows).toEqual([{ id: 'a' }]);
      expect((await conn.executeQuery(CompiledQuery.raw(select, ['a', 3]))).rows).toEqual([{ id: 'a' }]);
      expect(await preparedHere(conn)).toContain(select);
    });
  });
});

describe.skipIf(!isPostgres)('DATABASE_PREPARED_STATEMENTS=false (a pooler in transaction mode)', () => {
  it('sends marked statements as text', async () => {
    const url = (await fileDatabaseUrl())!;
    const config = loadConfig({ DATABASE_URL: url, DATABASE_PREPARED_STATEMENTS: 'false' });
    expect(config.database).toEqual({ kind: 'postgres', url, preparedStatements: false });
    const handle = await connectDatabase(config.database);
    try {
      await handle.db.connection().execute(async (conn) => {
        const rows = await conn.executeQuery(CompiledQuery.raw(`${PREPARED}select $1::text as v`, ['x']));
        expect(rows.rows).toEqual([{ v: 'x' }]);
        expect(await preparedHere(conn)).toEqual([]);
      });
    } finally {
      await handle.close();
    }
  });
});
