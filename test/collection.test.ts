import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { collectionAdopt, collectionList, collectionRemove, collectionSet } from '../src/cli/collection.ts';
import type { CliOutput } from '../src/cli/command.ts';
import { createSecretBox } from '../src/core/secret-box.ts';
import { connectDatabase } from '../src/db/connect.ts';
import { migrateToLatest, readMigrations } from '../src/db/migrate.ts';
import {
  checkCollectionInvariant,
  collectionFor,
  listCollections,
  refuseMerchantCollection,
} from '../src/payments/rails/collections.ts';
import { reconcileRailAttempts } from '../src/payments/rails/reconcile.ts';
import { settlePaidPayments } from '../src/settlement/payment-settlement.ts';
import { bearer, testAccount } from './support/harness.ts';
import { createPayment } from './support/payments.ts';
import {
  MPESA_APP,
  operatorCollects,
  PAYSTACK_LIVE_KEY,
  PAYSTACK_MERCHANT_OWN_KEY,
  PAYSTACK_TEST_KEY,
  type RailsWorld,
  railsWorld,
} from './support/rails.ts';

/**
 * Collection belongs to the operator (docs/rails.md, "Who collects"): no merchant key or dashboard
 * session can set where payers' money is collected, a merchant's own credential from before never
 * collects again, and a merchant paying its own checkout is credited once.
 */
let w: RailsWorld;

beforeAll(async () => {
  w = await railsWorld();
  await operatorCollects(w.runtime, 'paystack', { secret_key: PAYSTACK_TEST_KEY });
}, 60_000);

const checkoutForm = (id: string, fields: Record<string, string>) =>
  w.checkout.inject({
    method: 'POST',
    url: `/pay/${id}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: w.checkoutUrl },
    payload: new URLSearchParams(fields).toString(),
  });

const attemptsOf = (paymentId: string) =>
  w.runtime.db.selectFrom('payment_attempts').selectAll().where('payment_id', '=', paymentId).execute();

/** A credential the merchant connected itself before collection became the operator's, as migration 023 keeps it. */
async function merchantOwnPaystack(accountId: string): Promise<string> {
  const id = `col_${accountId.slice(-22)}`;
  const now = w.runtime.clock.now();
  await w.runtime.db
    .insertInto('collection_accounts')
    .values({
      id,
      rail: 'paystack',
      livemode: false,
      account_id: accountId,
      owner: 'merchant',
      settings: '{}',
      secret_ciphertext: w.runtime.secretBox.seal(JSON.stringify({ secret_key: PAYSTACK_MERCHANT_OWN_KEY })),
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}

describe('merchants cannot set where payers pay', () => {
  it('a merchant key (test or live) connecting or disconnecting a rail gets 403 saying the operator collects', async () => {
    const live = await testAccount(w.runtime, { livemode: true, name: 'Live Shop' });
    const before = await listCollections(w.runtime.db);
    for (const key of [w.merchant.apiKey, live.apiKey]) {
      for (const [method, payload] of [
        ['PUT', { secret_key: PAYSTACK_MERCHANT_OWN_KEY }],
        ['PUT', MPESA_APP],
        ['DELETE', undefined],
      ] as const) {
        for (const rail of ['paystack', 'mpesa']) {
          const res = await w.api.inject({ method, url: `/v1/payment_rails/${rail}`, headers: bearer(key), payload });
          expect(res.statusCode).toBe(403);
          expect(res.json().error).toMatchObject({
            type: 'permission_error',
            message: expect.stringContaining('set by the operator of this plainpay instance'),
          });
        }
      }
    }
    expect(await listCollections(w.runtime.db)).toEqual(before);
  });

  it('the dashboard shows the offered rails read-only and takes no credentials', async () => {
    const signIn = await w.api.inject({
      method: 'POST',
      url: '/dashboard/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      payload: new URLSearchParams({ api_key: w.merchant.apiKey }).toString(),
    });
    const cookie = /plainpay_session=[^;]+/.exec(String(signIn.headers['set-cookie']))![0];
    const page = await w.api.inject({ method: 'GET', url: '/dashboard/developers', headers: { cookie } });
    expect(page.body).toContain('data-rail="paystack"');
    expect(page.body).toContain('NGN, GHS, KES, ZAR');
    expect(page.body).not.toContain('name="secret_key"');
    expect(page.body).not.toContain('name="consumer_secret"');
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page.body)![1]!;
    const post = await w.api.inject({
      method: 'POST',
      url: '/dashboard/developers/rails/paystack',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      payload: new URLSearchParams({ csrf_token: csrf, secret_key: PAYSTACK_MERCHANT_OWN_KEY }).toString(),
    });
    expect(post.statusCode).toBe(404);
    const owned = await listCollections(w.runtime.db, { active: true, livemode: false });
    expect(owned.map((c) => [c.rail, c.owner, c.accountId])).toEqual([['paystack', 'operator', null]]);
  });
});

describe('a merchant paying its own checkout is credited once', () => {
  const settleIntoBalance = () => settlePaidPayments(w.runtime, { chunk: 50, testModeOnChain: async () => false });
  const balanceOf = async (key: string) =>
    (await w.api.inject({ method: 'GET', url: '/v1/balance', headers: bearer(key) })).json();

  it("pays into the operator's integration even with the merchant's own credential on file, and credits the quote once", async () => {
    const shop = await testAccount(w.runtime, { name: 'Self-paying Shop' });
    await merchantOwnPaystack(shop.accountId);
    const p = await createPayment(w.api, shop.apiKey, { amount: 5000, currency: 'NGN' });
    const offered = await w.api.inject({ method: 'GET', url: '/v1/payment_rails', headers: bearer(shop.apiKey) });
    expect(offered.json().data.map((r: { rail: string }) => r.rail)).toEqual(['sandbox', 'paystack']);

    expect((await checkoutForm(p.id, { rail: 'paystack', email: 'owner@shop.example' })).statusCode).toBe(303);
    const [attempt] = await attemptsOf(p.id);
    const operator = await collectionFor(
      w.runtime.db,
      w.runtime.secretBox,
      { accountId: shop.accountId, livemode: false },
      'paystack',
    );
    expect(attempt!.collection_id).toBe(operator!.account.id);
    // The naira go to the operator's Paystack integration, never the merchant's own.
    expect(w.paystack.transactions.get(attempt!.provider_reference!)).toMatchObject({ secretKey: PAYSTACK_TEST_KEY });
    await w.paystack.complete(attempt!.provider_reference!, 'success');
    await settleIntoBalance();
    const quote = (
      await w.api.inject({ method: 'GET', url: `/v1/payments/${p.id}`, headers: bearer(shop.apiKey) })
    ).json();
    expect(quote.status).toBe('settled');
    expect((await balanceOf(shop.apiKey)).available).toEqual([{ asset: 'USDC', amount: quote.settlement.amount }]);
    expect(await checkCollectionInvariant(w.runtime.db)).toEqual([]);
  });

  it("a success collected into the merchant's own credential is flagged and sent back to the payer, never credited", async () => {
    const shop = await testAccount(w.runtime, { name: 'Pre-migration Shop' });
    const own = await merchantOwnPaystack(shop.accountId);
    const p = await createPayment(w.api, shop.apiKey, { amount: 3000, currency: 'NGN' });
    // An attempt started before the migration, on the merchant's own integration: made the way it
    // was then (the merchant's credential collected), and the payer pays after the upgrade.
    await w.runtime.db.updateTable('collection_accounts').set({ owner: 'operator' }).where('id', '=', own).execute();
    await w.runtime.db
      .updateTable('collection_accounts')
      .set({ retired_at: w.runtime.clock.now() })
      .where('account_id', 'is', null)
      .where('rail', '=', 'paystack')
      .where('livemode', '=', false)
      .execute();
    try {
      expect((await checkoutForm(p.id, { rail: 'paystack', email: 'owner@shop.example' })).statusCode).toBe(303);
    } finally {
      await w.runtime.db.updateTable('collection_accounts').set({ owner: 'merchant' }).where('id', '=', own).execute();
      await w.runtime.db
        .updateTable('collection_accounts')
        .set({ retired_at: null })
        .where('account_id', 'is', null)
        .where('rail', '=', 'paystack')
        .where('livemode', '=', false)
        .execute();
    }
    const [attempt] = await attemptsOf(p.id);
    expect(attempt!.collection_id).toBe(own);
    expect(w.paystack.transactions.get(attempt!.provider_reference!)).toMatchObject({
      secretKey: PAYSTACK_MERCHANT_OWN_KEY,
    });

    // The payer pays; Paystack's signed event (the merchant's key) and verify confirm it.
    await w.paystack.complete(attempt!.provider_reference!, 'success');
    const [after] = await attemptsOf(p.id);
    expect(after).toMatchObject({ outcome: 'flagged', refund_status: 'due' });
    expect(after!.failure_reason).toContain('merchant-owned');
    await settleIntoBalance();
    const read = (
      await w.api.inject({ method: 'GET', url: `/v1/payments/${p.id}`, headers: bearer(shop.apiKey) })
    ).json();
    expect(read.status).toBe('pending');
    expect((await balanceOf(shop.apiKey)).available).toEqual([{ asset: 'USDC', amount: 0 }]);
    // The reconciler sends it back to the payer through the integration that holds it.
    await w.runtime.db
      .updateTable('payment_attempts')
      .set({ checked_at: null })
      .where('id', '=', attempt!.id)
      .execute();
    await reconcileRailAttempts(w.runtime);
    const sent = w.paystack.refunds.filter((r) => r.merchant_note === attempt!.id);
    expect(sent).toHaveLength(1);
    expect((await attemptsOf(p.id))[0]!.refund_status).toBe('refunded');
    expect(await checkCollectionInvariant(w.runtime.db)).toEqual([]);
  });

  it('the invariant names a payment credited without an operator-owned collection', async () => {
    const shop = await testAccount(w.runtime, { name: 'Forged Shop' });
    const p = await createPayment(w.api, shop.apiKey, { amount: 1000, currency: 'NGN' });
    // A posting no tool would make (no success on an operator's collection account), checked
    // inside a transaction that is then rolled back: the file's own invariant check stays clean.
    const seen = await w.runtime.db
      .transaction()
      .execute(async (trx) => {
        await sql`insert into ledger_postings (kind, reference, created_at) values ('payment_received', ${p.id}, now())`.execute(
          trx,
        );
        const problems = await checkCollectionInvariant(trx);
        throw Object.assign(new Error('rollback'), { problems });
      })
      .catch((error: { problems?: string[] }) => error.problems);
    expect(seen).toEqual([
      `${p.id} (test) was credited without a success collected into an operator-owned collection account`,
    ]);
  });
});

describe('the operator sets collection from the CLI', () => {
  const output = () => {
    const lines: string[] = [];
    const out: CliOutput = { stdout: (l) => lines.push(l), stderr: (l) => lines.push(`ERR ${l}`) };
    return { lines, out };
  };
  const context = () => ({
    db: w.runtime.db,
    secretBox: w.runtime.secretBox,
    clock: w.runtime.clock,
    config: w.runtime.config,
  });

  it('sets a live collection account for one account, lists it without secrets, and removes it', async () => {
    const live = await testAccount(w.runtime, { livemode: true, name: 'CLI Shop' });
    const dir = mkdtempSync(join(tmpdir(), 'plainpay-collection-'));
    try {
      const file = join(dir, 'paystack.json');
      writeFileSync(file, JSON.stringify({ secret_key: PAYSTACK_LIVE_KEY }));
      const set = output();
      const work = collectionSet.parse(['paystack', '--live', '--account', live.accountId, '--credentials', file]);
      expect(work.argv).toEqual([
        'collection',
        'set',
        'paystack',
        `--credentials=${file}`,
        '--live',
        '--account',
        live.accountId,
      ]);
      expect(await work(context(), set.out)).toBe(0);
      expect(set.lines[0]).toMatch(
        new RegExp(`^Set col_\\w{22}  paystack  live  ${live.accountId}  operator  collecting$`),
      );

      // A test key for live mode, a missing file and an unknown rail are refused before anything is written.
      writeFileSync(file, JSON.stringify({ secret_key: PAYSTACK_TEST_KEY }));
      expect(() => collectionSet.parse(['paystack', '--live', '--credentials', file])).toThrow(/live Paystack key/);
      expect(() => collectionSet.parse(['paystack', '--credentials', join(dir, 'missing.json')])).toThrow(
        /cannot be read/,
      );
      expect(() => collectionSet.parse(['flutterwave', '--credentials', file])).toThrow(/Name the rail/);

      const list = output();
      await collectionList.parse(['--json'])(context(), list.out);
      // A list, as the API prints every list.
      const {
        object,
        data: listed,
        has_more,
      } = JSON.parse(list.lines[0]!) as {
        object: string;
        data: Array<Record<string, unknown>>;
        has_more: boolean;
      };
      expect({ object, has_more }).toEqual({ object: 'list', has_more: false });
      expect(JSON.stringify(listed)).not.toContain(PAYSTACK_LIVE_KEY);
      expect(listed).toContainEqual(
        expect.objectContaining({
          rail: 'paystack',
          livemode: true,
          account: live.accountId,
          owner: 'operator',
          retired_at: null,
        }),
      );
      const p = await createPayment(w.api, live.apiKey, { amount: 2500, currency: 'NGN' });
      expect((await w.checkout.inject({ method: 'GET', url: `/pay/${p.id}` })).body).toContain('with Paystack');

      const removed = output();
      expect(
        await collectionRemove.parse(['paystack', '--live', '--account', live.accountId])(context(), removed.out),
      ).toBe(0);
      expect((await w.checkout.inject({ method: 'GET', url: `/pay/${p.id}` })).body).not.toContain('with Paystack');
      await expect(
        collectionRemove.parse(['paystack', '--live', '--account', live.accountId])(context(), output().out),
      ).rejects.toMatchObject({ code: 'not_found' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses to collect on live M-Pesa until PUBLIC_BASE_URL gives Daraja an HTTPS callback URL it takes', async () => {
    const live = await testAccount(w.runtime, { livemode: true, name: 'CLI Duka' });
    const dir = mkdtempSync(join(tmpdir(), 'plainpay-collection-'));
    try {
      const file = join(dir, 'mpesa.json');
      writeFileSync(file, JSON.stringify({ ...MPESA_APP, environment: 'production' }));
      const set = (publicBaseUrl: string) =>
        collectionSet.parse(['mpesa', '--live', '--account', live.accountId, '--credentials', file])(
          { ...context(), config: { publicBaseUrl } },
          output().out,
        );
      // This file's PUBLIC_BASE_URL is http://127.0.0.1:…: Daraja production would refuse every push's callback.
      await expect(set(w.runtime.config.publicBaseUrl)).rejects.toThrow(
        `PUBLIC_BASE_URL (${w.runtime.config.publicBaseUrl}): M-Pesa's callback URL is not HTTPS`,
      );
      await expect(set('https://10.0.0.7')).rejects.toThrow(/not a public address/);
      await expect(set('https://pay.mpesa-duka.example')).rejects.toThrow(/contains "mpesa"/);
      expect(
        await collectionFor(w.runtime.db, w.runtime.secretBox, { accountId: live.accountId, livemode: true }, 'mpesa'),
      ).toBeUndefined();

      expect(await set('https://pay.duka.example')).toBe(0);
      expect(
        (await collectionFor(w.runtime.db, w.runtime.secretBox, { accountId: live.accountId, livemode: true }, 'mpesa'))
          ?.account.accountId,
      ).toBe(live.accountId);
      // The sandbox (test mode) calls back on plain http too.
      writeFileSync(file, JSON.stringify(MPESA_APP));
      expect(
        await collectionSet.parse(['mpesa', '--account', live.accountId, '--credentials', file])(
          context(),
          output().out,
        ),
      ).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a live merchant-owned credential stops the start until the operator adopts or removes it', async () => {
    const shop = await testAccount(w.runtime, { livemode: true, name: 'Old Live Shop' });
    const id = `col_${shop.accountId.slice(-22)}`;
    const now = w.runtime.clock.now();
    await w.runtime.db
      .insertInto('collection_accounts')
      .values({
        id,
        rail: 'paystack',
        livemode: true,
        account_id: shop.accountId,
        owner: 'merchant',
        settings: '{}',
        secret_ciphertext: w.runtime.secretBox.seal(JSON.stringify({ secret_key: PAYSTACK_LIVE_KEY })),
        created_at: now,
        updated_at: now,
      })
      .execute();
    const warnings: string[] = [];
    await expect(refuseMerchantCollection(w.runtime.db, (m) => warnings.push(m))).rejects.toMatchObject({
      message: expect.stringContaining(`Not starting: 1 live payer rail(s) were connected by merchants`),
    });
    await expect(refuseMerchantCollection(w.runtime.db, () => {})).rejects.toThrow(id);

    const adopted = output();
    expect(await collectionAdopt.parse([id])(context(), adopted.out)).toBe(0);
    expect(adopted.lines[0]).toContain(`${id}  paystack  live  ${shop.accountId}  operator  collecting`);
    await expect(refuseMerchantCollection(w.runtime.db, (m) => warnings.push(m))).resolves.toBeUndefined();
    // Adopted, it collects for that account again.
    const p = await createPayment(w.api, shop.apiKey, { amount: 2500, currency: 'NGN' });
    expect((await w.checkout.inject({ method: 'GET', url: `/pay/${p.id}` })).body).toContain('with Paystack');
    await expect(collectionAdopt.parse([id])(context(), output().out)).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('migration 023 keeps what merchants had connected, as merchant-owned', () => {
  it('moves rail_credentials into collection_accounts, owned by the merchant, links their attempts, and warns of them at start', async () => {
    // The directory exists before connecting so PGlite runs initdb in it: a new directory would get
    // the pre-migrated image (`npm run build` makes one; CI has it), already past migration 023.
    const dir = mkdtempSync(join(tmpdir(), 'plainpay-migration-'));
    const handle = await connectDatabase({ kind: 'pglite', dataDir: dir });
    try {
      const before = readMigrations().filter((m) => m.version < 23);
      await migrateToLatest(handle.db, before);
      const box = createSecretBox(Buffer.alloc(32, 7));
      const sealed = box.seal(JSON.stringify({ secret_key: PAYSTACK_TEST_KEY }));
      await sql`insert into accounts (id, name) values ('acct_0000000000000000000001', 'Old Shop')`.execute(handle.db);
      await sql`insert into rail_credentials (account_id, livemode, rail, settings, secret_ciphertext)
                values ('acct_0000000000000000000001', false, 'paystack', '{"secret_key_last4":"1009"}', ${sealed})`.execute(
        handle.db,
      );
      // An attempt in flight on it at the upgrade, and a sandbox one.
      await sql`insert into payments (id, account_id, livemode, status, amount_minor, currency, redirect_url,
                  creation_hash, expires_at, quote_rate, quote_source, fee_bps, settlement_asset,
                  gross_settlement_minor, fee_minor, settlement_minor)
                values ('pay_0000000000000000000001', 'acct_0000000000000000000001', false, 'processing', 500000,
                  'NGN', 'https://shop.example/done', 'h', now() + interval '1 hour', '0.0006', 'sandbox', 100,
                  'USDC', 3000000, 30000, 2970000)`.execute(handle.db);
      await sql`insert into payment_attempts (id, payment_id, rail, outcome, amount_minor, currency, provider_reference)
                values ('att_0000000000000000000001', 'pay_0000000000000000000001', 'paystack', 'pending', 500000,
                  'NGN', 'att-0000000000000000000001'),
                       ('att_0000000000000000000002', 'pay_0000000000000000000001', 'sandbox', 'declined', null,
                  null, null)`.execute(handle.db);
      await migrateToLatest(handle.db);
      const rows = await handle.db.selectFrom('collection_accounts').selectAll().execute();
      const attempts = await handle.db
        .selectFrom('payment_attempts')
        .select(['id', 'collection_id'])
        .orderBy('id')
        .execute();
      expect(attempts).toEqual([
        { id: 'att_0000000000000000000001', collection_id: rows[0]?.id },
        { id: 'att_0000000000000000000002', collection_id: null },
      ]);
      expect(rows).toEqual([
        expect.objectContaining({
          rail: 'paystack',
          livemode: false,
          account_id: 'acct_0000000000000000000001',
          owner: 'merchant',
          secret_ciphertext: sealed,
          retired_at: null,
        }),
      ]);
      expect(rows[0]!.id).toMatch(/^col_[0-9a-f]{22}$/);
      const gone = await sql<{
        n: string;
      }>`select count(*)::text as n from information_schema.tables where table_name = 'rail_credentials'`.execute(
        handle.db,
      );
      expect(gone.rows[0]!.n).toBe('0');
      const warned: string[] = [];
      await refuseMerchantCollection(handle.db, (m) => warned.push(m));
      expect(warned).toEqual([expect.stringContaining(`${rows[0]!.id} (paystack, acct_0000000000000000000001)`)]);
    } finally {
      await handle.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
