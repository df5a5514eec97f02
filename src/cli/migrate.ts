import type { Config } from '../config/config.ts';
import { connectDatabase } from '../db/connect.ts';
import { migrateToLatest } from '../db/migrate.ts';

export async function migrateCommand(config: Config): Promise<number> {
  const handle = await connectDatabase(config.database, { poolSize: 1 });
  try {
    const applied = await migrateToLatest(handle.db);
    console.log(applied.length > 0 ? `Applied: ${applied.join(', ')}` : 'The database is up to date.');
    return 0;
  } finally {
    await handle.close();
  }
}
