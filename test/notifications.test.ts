import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { newId } from '../src/domain/ids.ts';
import { insertEvent } from '../src/db/repositories/events.ts';
import { NOTIFICATION_CHANNELS } from '../src/db/notifications.ts';
import { isPostgres, testAccount, testRuntime } from './support/harness.ts';

/** Resolves with the next payload heard on the channel; the ceiling is reached only by a hang. */
function nextNotification(listen: (onNotify: (payload: string) => void) => Promise<() => Promise<void>>): {
  heard: Promise<string[]>;
  ready: Promise<() => Promise<void>>;
} {
  const payloads: string[] = [];
  let resolveHeard!: (p: string[]) => void;
  const heard = new Promise<string[]>((resolve) => {
    resolveHeard = resolve;
  });
  const ready = listen((payload) => {
    payloads.push(payload);
    resolveHeard(payloads);
  });
  return { heard, ready };
}

describe('database notifications', () => {
  const unsubscribes: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const u of unsubscribes) await u();
  });

  it('an event that commits wakes a listener with its type and object; a rolled-back one does not', async () => {
    const runtime = await testRuntime();
    const { accountId } = await testAccount(runtime);
    const { heard, ready } = nextNotification((cb) => runtime.notifications.listen(NOTIFICATION_CHANNELS.events, cb));
    unsubscribes.push(await ready);

    const rolledBack = newId('pay');
    await runtime.db
      .transaction()
      .execute(async (trx) => {
        await insertEvent(trx, {
          accountId,
          livemode: false,
          type: 'payment.paid',
          objectId: rolledBack,
          data: {},
          webhookUrl: null,
          createdAt: runtime.clock.now(),
        });
        throw new Error('roll back');
      })
      .catch(() => {});
    const committed = newId('pay');
    await runtime.db.transaction().execute((trx) =>
      insertEvent(trx, {
        accountId,
        livemode: false,
        type: 'payment.paid',
        objectId: committed,
        data: {},
        webhookUrl: null,
        createdAt: runtime.clock.now(),
      }),
    );
    expect(await heard).toEqual([`payment.paid ${committed}`]);
  });
});

describe.skipIf(!isPostgres)('the Postgres listening client', () => {
  it('listens on every channel at once (as a worker starts) without a query on a client already executing one', async () => {
    const runtime = await testRuntime();
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning);
    };
    process.on('warning', onWarning);
    try {
      const channels = Object.values(NOTIFICATION_CHANNELS);
      const waits = channels.map((channel) => nextNotification((cb) => runtime.notifications.listen(channel, cb)));
      const unlisten = await Promise.all(waits.map((w) => w.ready));
      // Every channel is heard after all.
      await runtime.db.transaction().execute(async (trx) => {
        for (const channel of channels) await sql`select pg_notify(${channel}, 'wake')`.execute(trx);
      });
      expect(await Promise.all(waits.map((w) => w.heard))).toEqual(channels.map(() => ['wake']));
      await Promise.all(unlisten.map((u) => u()));
      // pg reports the queued query once per process, a tick later.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((w) => w.message).filter((m) => /already executing a query/.test(m))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
