import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import type { Database } from './database.ts';
import {
  buildDatabaseImage,
  databaseImageIsCurrent,
  restoreDatabaseImage,
  usableDatabaseImage,
} from './database-image.ts';
import { migrateToLatest, readMigrations } from './migrate.ts';
import { PGliteDialect } from './pglite-dialect.ts';

const root = mkdtempSync(join(tmpdir(), 'plainpay-image-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Everything migrations define, as text: tables and columns, indexes, constraints, triggers, functions, views. */
async function schemaOf(db: Kysely<Database>): Promise<unknown> {
  const rows = async (query: ReturnType<typeof sql>) => (await query.execute(db)).rows;
  return {
    columns: await rows(sql`select table_name, column_name, data_type, is_nullable, column_default
      from information_schema.columns where table_schema = 'public' order by 1, 2`),
    indexes: await rows(sql`select indexname, indexdef from pg_indexes where schemaname = 'public' order by 1`),
    constraints: await rows(sql`select conrelid::regclass::text as tbl, conname, pg_get_constraintdef(oid) as def
      from pg_constraint where connamespace = 'public'::regnamespace order by 1, 2`),
    triggers: await rows(sql`select tgrelid::regclass::text as tbl, tgname, pg_get_triggerdef(oid) as def
      from pg_trigger where not tgisinternal order by 1, 2`),
    functions: await rows(
      sql`select proname, prosrc from pg_proc where pronamespace = 'public'::regnamespace order by 1`,
    ),
    views: await rows(sql`select viewname, definition from pg_views where schemaname = 'public' order by 1`),
    migrations: await rows(sql`select version, name from schema_migrations order by version`),
  };
}

async function withDatabase<T>(dataDir: string, work: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  const pglite = await PGlite.create({ dataDir });
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  try {
    return await work(db);
  } finally {
    await db.destroy();
    await pglite.close();
  }
}

describe('the pre-migrated database image', () => {
  const migrations = readMigrations();
  const older = migrations.slice(0, -1);
  const newest = migrations.at(-1)!;
  const image = join(root, 'image');

  it('seeds a database that ends up as migrate leaves one, newer migrations applied on top', async () => {
    // An image built before the newest migration existed, as after a pull that brings one.
    await buildDatabaseImage(image, older);
    expect(usableDatabaseImage(migrations, image)).toBe(image);
    // …but a build makes it again, to hold the newest migration too.
    expect(databaseImageIsCurrent(migrations, image)).toBe(false);
    expect(databaseImageIsCurrent(older, image)).toBe(true);

    const seeded = join(root, 'seeded');
    restoreDatabaseImage(image, seeded);
    const fromImage = await withDatabase(seeded, async (db) => {
      expect(await migrateToLatest(db, migrations)).toEqual([newest.name]);
      return schemaOf(db);
    });
    const migrated = await withDatabase(join(root, 'migrated'), async (db) => {
      await migrateToLatest(db, migrations);
      return schemaOf(db);
    });
    expect(fromImage).toEqual(migrated);
  }, 240_000);

  it('is not used once a migration it holds was edited or removed, or without its manifest', () => {
    const edited = older.map((m, i) => (i === 0 ? { ...m, sql: `${m.sql}\n-- edited` } : m));
    expect(usableDatabaseImage(edited, image)).toBeUndefined();
    expect(usableDatabaseImage(older.slice(1), image)).toBeUndefined();
    expect(usableDatabaseImage(migrations, join(root, 'no-such-image'))).toBeUndefined();
  });
});
