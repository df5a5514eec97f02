import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.ts';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));
/** An arbitrary constant: the advisory lock that serialises migrations across instances. */
const MIGRATION_LOCK_KEY = 727_274_001;

export interface MigrationFile {
  version: number;
  name: string;
  sql: string;
}

/** Lists migrations/NNN_name.sql in order. Forward-only: there are no down migrations. */
export function readMigrations(dir: string = MIGRATIONS_DIR): MigrationFile[] {
  return readdirSync(dir)
    .filter((file) => /^\d{3}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: Number.parseInt(file.slice(0, 3), 10),
      name: file.replace(/\.sql$/, ''),
      sql: readFileSync(`${dir}${file}`, 'utf8'),
    }));
}

/**
 * Applies every migration not yet recorded, in one transaction, under an advisory lock so that
 * N instances starting together apply each migration once. Returns the names applied now.
 */
export async function migrateToLatest(
  db: Kysely<Database>,
  migrations = readMigrations(),
  options: { progress?: (line: string) => void } = {},
): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`.execute(trx);
    await sql`create table if not exists schema_migrations (
      version integer primary key,
      name text not null,
      applied_at timestamptz not null default now()
    )`.execute(trx);
    const applied = new Set(
      (await sql<{ version: number }>`select version from schema_migrations`.execute(trx)).rows.map((r) => r.version),
    );
    const pending = migrations.filter((migration) => !applied.has(migration.version));
    if (pending.length > 0) {
      const names = pending.length === 1 ? pending[0]!.name : `${pending[0]!.name} … ${pending.at(-1)!.name}`;
      options.progress?.(`Applying ${pending.length} database migration${pending.length === 1 ? '' : 's'} (${names})…`);
    }
    const done: string[] = [];
    for (const migration of pending) {
      await sql.raw(migration.sql).execute(trx);
      await sql`insert into schema_migrations (version, name) values (${migration.version}, ${migration.name})`.execute(
        trx,
      );
      done.push(migration.name);
    }
    return done;
  });
}
