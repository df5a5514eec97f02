import pg from 'pg';

/**
 * Drops a scratch database once nothing uses it any more. `db.destroy()` resolves as soon as the
 * pool has asked its connections to end, not when they have; a `DROP … WITH (FORCE)` right then
 * kills backends whose clients are still closing, and pg raises that FATAL in this process as an
 * uncaught error. So: a plain DROP, retried while the database is still in use (55006), and FORCE
 * only if something still holds it after five seconds (a killed child's connection, say).
 */
export async function dropScratchDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    for (let attempt = 0; attempt < 100; attempt += 1) {
      try {
        await client.query(`drop database if exists ${name}`);
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== '55006') throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    await client.query(`drop database if exists ${name} with (force)`);
  } finally {
    await client.end();
  }
}
