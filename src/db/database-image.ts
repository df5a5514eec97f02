// The pre-migrated embedded database: a PGlite data directory on which initdb and every migration
// already ran, made once by the build (scripts/build.mjs) into dist/pgdata-image. A first start
// copies it instead of running initdb (several seconds and ~900 MB of memory inside PGlite) and
// every migration; migrateToLatest then applies whatever migration is newer than the image.
//
// It is the database migrate leaves, made by the same migrateToLatest on the same PGlite, so a
// restored directory is what a first start without it would have made (the only difference is
// schema_migrations.applied_at: the build's time). It is used only while it still is that: the
// manifest beside it names the PGlite version and the content hash of each migration it holds,
// and a different PGlite, or a migration edited or removed since, means a first start runs
// initdb and the migrations instead, as it does without a build.

import { sha256Hex } from '../core/sha256.ts';
import { cpSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { Kysely } from 'kysely';
import type { Database } from './database.ts';
import { type MigrationFile, migrateToLatest, readMigrations } from './migrate.ts';
import { PGliteDialect } from './pglite-dialect.ts';

/** dist/pgdata-image, seen from the compiled module (dist/src/db/) or from its source (src/db/). */
export const DATABASE_IMAGE_DIR = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? '../../dist/pgdata-image' : '../../pgdata-image', import.meta.url),
);

/** Beside the image, not in it: the data directory a first start copies holds only Postgres's files. */
function manifestOf(image: string): string {
  return `${image}.json`;
}

interface ImageManifest {
  pglite: string;
  migrations: { version: number; name: string; sha256: string }[];
}

/**
 * Makes the image: a new PGlite data directory, migrated to the latest migration, closed cleanly.
 * Built beside and renamed into place, so a reader never sees half an image.
 */
export async function buildDatabaseImage(
  image: string = DATABASE_IMAGE_DIR,
  migrations: MigrationFile[] = readMigrations(),
): Promise<{ migrations: number }> {
  const staging = `${image}.building`;
  rmSync(staging, { recursive: true, force: true });
  rmSync(manifestOf(image), { force: true });
  rmSync(image, { recursive: true, force: true });
  const pglite = await PGlite.create({ dataDir: staging });
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  try {
    await migrateToLatest(db, migrations);
  } finally {
    await db.destroy();
    await pglite.close();
  }
  renameSync(staging, image);
  const manifest: ImageManifest = {
    pglite: pgliteVersion(),
    migrations: migrations.map(({ version, name, sql }) => ({ version, name, sha256: sha256Hex(sql) })),
  };
  writeFileSync(manifestOf(image), `${JSON.stringify(manifest, null, 2)}\n`);
  return { migrations: migrations.length };
}

/**
 * The image's path when it may seed a new database: built by this PGlite version from exactly the
 * migration files of the same versions here now. Undefined when there is none or it is outdated.
 */
export function usableDatabaseImage(
  migrations: MigrationFile[] = readMigrations(),
  image: string = DATABASE_IMAGE_DIR,
): string | undefined {
  // Anything unexpected (no manifest, one of another shape, a file that cannot be read) means no
  // image: a first start then runs initdb, as without a build.
  try {
    const manifest = JSON.parse(readFileSync(manifestOf(image), 'utf8')) as ImageManifest;
    if (manifest.pglite !== pgliteVersion() || !existsSync(join(image, 'PG_VERSION'))) return undefined;
    const current = new Map(migrations.map((m) => [m.version, m]));
    const unchanged = manifest.migrations.every((held) => {
      const now = current.get(held.version);
      return now !== undefined && now.name === held.name && sha256Hex(now.sql) === held.sha256;
    });
    return unchanged ? image : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the image is usable and holds every migration there is: a build need not make it again. */
export function databaseImageIsCurrent(
  migrations: MigrationFile[] = readMigrations(),
  image: string = DATABASE_IMAGE_DIR,
): boolean {
  if (!usableDatabaseImage(migrations, image)) return false;
  const manifest = JSON.parse(readFileSync(manifestOf(image), 'utf8')) as ImageManifest;
  return manifest.migrations.length === migrations.length;
}

/**
 * Seeds a data directory that does not exist yet with the image. The caller holds the data
 * directory's lock. The copy goes to a sibling and is renamed into place: a start killed mid-copy
 * leaves no half database that would look like a real one. A build that replaced the image during
 * the copy (its manifest changed) fails the restore, and the caller runs initdb instead.
 */
export function restoreDatabaseImage(image: string, dataDir: string): void {
  const staging = `${dataDir}.restoring`;
  try {
    const before = readFileSync(manifestOf(image), 'utf8');
    rmSync(staging, { recursive: true, force: true });
    cpSync(image, staging, { recursive: true });
    if (readFileSync(manifestOf(image), 'utf8') !== before) throw new Error('the image was rebuilt during the copy');
    renameSync(staging, dataDir);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
}

/** The installed PGlite's version: its package.json is not exported, so found beside its entry. */
function pgliteVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const manifest = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}
