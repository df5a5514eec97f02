import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../src/db/connect.ts';
import { hashApiKey } from '../src/domain/api-key-secret.ts';
import { keyCacheOf } from '../src/http/plugins/auth.ts';
import { issueApiKey, revokeAccountApiKey } from '../src/keys/api-keys.ts';
import { afterFile } from './support/after-file.ts';
import {
  bearer,
  fileDatabaseUrl,
  isPostgres,
  testAccount,
  testApp,
  testDatabase,
  testRuntime,
  type TestAccount,
  type TestRuntime,
} from './support/harness.ts';

/**
 * The API host caches key rows (src/http/plugins/auth.ts, KeyCache): a key changed by another
 * process sharing the database must be refused (the change's notification, migration 021, drops
 * the entry; the TTL is the safety net), and one revoked through this host on the very next request. The other process is
 * a second runtime on its own connections (on Postgres: its own pool and listening client; PGlite
 * is one session per data dir, so there the two runtimes share it). Its changes are written
 * straight to the table, so the only way the API host can learn of them is the notification.
 */
let api: TestRuntime;
let other: TestRuntime;
let app: FastifyInstance;
let merchant: TestAccount;

/** Pings with `key` until it is refused; a ceiling only a hang reaches (no timing is asserted). */
async function refusedSoon(key: string): Promise<number> {
  const until = Date.now() + 20_000;
  let status = await ping(key);
  while (status === 200 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    status = await ping(key);
  }
  return status;
}

async function ping(key: string): Promise<number> {
  return (await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(key) })).statusCode;
}

beforeAll(async () => {
  api = await testRuntime();
  app = await testApp(api);
  merchant = await testAccount(api);
  if (isPostgres) {
    const own = await connectDatabase({ kind: 'postgres', url: (await fileDatabaseUrl())! });
    afterFile(() => own.close());
    other = await testRuntime({}, { database: own });
  } else {
    other = await testRuntime({}, { database: await testDatabase() });
  }
});

describe('the key cache', () => {
  it('keeps the row of a key in use, on either database, once changes are heard', async () => {
    const key = await issueApiKey(api.db, { accountId: merchant.accountId, livemode: false });
    expect(keyCacheOf(api).knows(hashApiKey(key.secret))).toBe(false);
    // The listener may still be connecting just after start: nothing is kept until it hears.
    await waitFor(async () => (await ping(key.secret)) === 200 && keyCacheOf(api).knows(hashApiKey(key.secret)));
  });

  it('answers the SHA-256 of the secret presented, whether remembered (a cached key) or not', async () => {
    const key = await issueApiKey(api.db, { accountId: merchant.accountId, livemode: false });
    await waitFor(async () => (await ping(key.secret)) === 200 && keyCacheOf(api).knows(hashApiKey(key.secret)));
    const keys = keyCacheOf(api);
    const madeUp = `${key.secret.slice(0, -1)}${key.secret.endsWith('a') ? 'b' : 'a'}`;
    for (const secret of [key.secret, key.secret, madeUp, key.secret, madeUp]) {
      expect(keys.hashOf(secret)).toBe(hashApiKey(secret));
    }
    expect(await ping(madeUp)).toBe(401);
    expect(await ping(key.secret)).toBe(200);
  });

  it('a key revoked by another process is refused once its change is announced', async () => {
    const key = await issueApiKey(other.db, { accountId: merchant.accountId, livemode: false });
    // Twice: the second answer comes from the cache.
    expect(await ping(key.secret)).toBe(200);
    expect(await ping(key.secret)).toBe(200);
    await other.db.updateTable('api_keys').set({ revoked_at: other.clock.now() }).where('id', '=', key.id).execute();
    // PGlite is one session: its notification is heard before the write returns.
    if (!isPostgres) expect(await ping(key.secret)).toBe(401);
    expect(await refusedSoon(key.secret)).toBe(401);
  });

  it('a key rotated by another process (old key expiring now) is refused, the new one accepted', async () => {
    const key = await issueApiKey(other.db, { accountId: merchant.accountId, livemode: false });
    expect(await ping(key.secret)).toBe(200);
    expect(await ping(key.secret)).toBe(200);
    const replacement = await issueApiKey(other.db, {
      accountId: merchant.accountId,
      livemode: false,
      rotatedFrom: key.id,
    });
    await other.db.updateTable('api_keys').set({ expires_at: other.clock.now() }).where('id', '=', key.id).execute();
    expect(await refusedSoon(key.secret)).toBe(401);
    expect(await ping(replacement.secret)).toBe(200);
  });

  it('a key revoked through this API host is refused on the very next request', async () => {
    const key = await issueApiKey(api.db, { accountId: merchant.accountId, livemode: false });
    expect(await ping(key.secret)).toBe(200);
    expect(await ping(key.secret)).toBe(200);
    const revoke = await app.inject({
      method: 'POST',
      url: `/keys/${key.id}/revoke`,
      headers: bearer(merchant.apiKey),
    });
    expect(revoke.statusCode).toBe(200);
    expect(await ping(key.secret)).toBe(401);
  });
});

describe.runIf(isPostgres)('the key cache and changes not yet committed', () => {
  it('a key this process revokes in an open transaction is not cached meanwhile, and is refused after the commit', async () => {
    const key = await issueApiKey(api.db, { accountId: merchant.accountId, livemode: false });
    await waitFor(async () => (await ping(key.secret)) === 200 && keyCacheOf(api).knows(hashApiKey(key.secret)));
    await api.db.transaction().execute(async (trx) => {
      // Announced to the cache here, before the commit (as a rotation through the API does).
      await revokeAccountApiKey(trx, merchant.accountId, key.id, api.clock.now(), null);
      // Meanwhile a request reads the committed row, still valid: answered, and not kept.
      expect(await ping(key.secret)).toBe(200);
      expect(keyCacheOf(api).knows(hashApiKey(key.secret))).toBe(false);
    });
    expect(await ping(key.secret)).toBe(401);
  });
});

describe.runIf(isPostgres)('the key cache while Postgres notifications are not heard', () => {
  it('serves nothing from the cache while the listening connection is down, and forgets all when it is back', async () => {
    const key = await issueApiKey(api.db, { accountId: merchant.accountId, livemode: false });
    await waitFor(async () => (await ping(key.secret)) === 200 && keyCacheOf(api).knows(hashApiKey(key.secret)));

    // A database restart, as far as this process can tell: its listening session is killed.
    await sql`select pg_terminate_backend(pid) from pg_stat_activity
              where datname = current_database() and query ilike 'listen %'`.execute(other.db);
    await waitFor(async () => !api.notifications.hearing());
    // Revoked meanwhile: its notification is lost, and the cached row must not answer for it.
    await other.db.updateTable('api_keys').set({ revoked_at: other.clock.now() }).where('id', '=', key.id).execute();
    expect(await ping(key.secret)).toBe(401);

    // Listening again (after its backoff): nothing of before is kept, and the key is refused.
    await waitFor(async () => api.notifications.hearing());
    expect(keyCacheOf(api).knows(hashApiKey(key.secret))).toBe(false);
    expect(await ping(key.secret)).toBe(401);
  });
});

/** Polls until `holds` is true; the 20 s ceiling is reached only by a hang (no timing is asserted). */
async function waitFor(holds: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + 20_000;
  while (!(await holds())) {
    if (Date.now() > until) throw new Error('the awaited state never came');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
