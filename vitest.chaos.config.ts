import { defineConfig } from 'vitest/config';

/**
 * The chaos suite (`npm run chaos`): failures of what plainpay depends on (a Postgres restart, a
 * Redis outage, a frozen or replaced chain node, reorgs, SIGTERM under load). Each file starts the
 * dependency it breaks (its own Postgres cluster, Redis server or devnet node), so nothing else on
 * the machine is disturbed; it needs the Debian postgresql and redis-server binaries. CI runs it
 * with DATABASE_URL and REDIS_URL set, alone, after the other suites.
 */
export default defineConfig({
  test: {
    include: ['test/chaos/**/*.test.ts'],
    maxWorkers: 2,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    globalSetup: ['test/global-setup.ts'],
  },
});
