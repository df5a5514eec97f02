// Issue 15, item 4: every list and filter of the API, the dashboard and the agent is an index scan
// scoped to the account. Each request below goes through the real routes and query builders; a
// Kysely plugin records the SQL they send, and each list query (the one ordered by created_at, id)
// is EXPLAINed as sent, parameters included.
//
// What the assertion means. The plan is taken with seq scans, bitmap scans and sorts priced out
// (`set local enable_… = off`): the planner still uses them when nothing else can answer, so what
// it shows is whether an index CAN answer the list in order. The assertion then asks for: no Sort
// node; the list table read by an Index Scan on an index whose leading columns are account_id and
// livemode; every filter of the request (and the keyset cursor, which is created_at, id) inside
// the Index Cond, not in a Filter applied to the rows read. Then the scan starts at the first
// matching row of this account, mode and filter value, at the cursor, and stops after limit + 1
// rows: the rows read are the page, whatever the account, the other accounts or the other values
// hold. That is "latency at 100k within 1.5× of 1k"; bench/lists.ts measures the latency itself.
// The rows seeded are a few thousand per account and the values filtered for rare, so the
// cheapest ordered index is the one that starts at the value (a common value may fairly be read
// from the plain list index).
// It runs on both backends: PGlite is Postgres, with the same planner and the same EXPLAIN.

import type { FastifyInstance } from 'fastify';
import type { LightMyRequestResponse } from 'fastify';
import { CompiledQuery, type KyselyPlugin, PostgresQueryCompiler, sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../src/runtime.ts';
import { bearer, type TestAccount, testAccount, testApp, testDatabase, testRuntime } from './support/harness.ts';

const compiler = new PostgresQueryCompiler();
let captured: CompiledQuery[] = [];
/** Records every query the app sends, as compiled for Postgres. */
const capture: KyselyPlugin = {
  transformQuery(args) {
    captured.push(compiler.compileQuery(args.node, args.queryId));
    return args.node;
  },
  async transformResult(args) {
    return args.result;
  },
};

let runtime: Runtime;
let app: FastifyInstance;
let merchant: TestAccount;
let cookie: string;
/** Each index's columns, in order, and whether it is unique. */
let indexes: Map<string, { columns: string[]; unique: boolean }>;

/** Rows of one account and mode, `count` payments' worth; the values filtered for below are rare. */
function seed(accountId: string, livemode: boolean, tag: string, count: number) {
  const scope = sql`${accountId}, ${livemode}`;
  const at = sql`timestamptz '2026-01-01T00:00:00Z' - n * interval '1 minute'`;
  return [
    sql`insert into payments (id, account_id, livemode, status, amount_minor, currency, redirect_url, reference,
      creation_hash, expires_at, quote_rate, quote_source, fee_bps, settlement_asset, gross_settlement_minor,
      fee_minor, settlement_minor, refunded_minor, created_at, updated_at)
    select ${`pay_${tag}_`} || n, ${scope}, case when n % 100 = 7 then 'refunded' else 'settled' end, 5000, 'NGN',
      'https://shop.example/thanks', ${`order_${tag}_`} || n, md5(n::text), ${at} + interval '1 hour', '0.00065',
      'fixed', 100, 'USDC', 3250000, 32500, 3217500, case when n % 100 = 7 then 5000 else 0 end, ${at}, ${at}
    from generate_series(1, ${count}) n`,
    sql`insert into events (id, account_id, livemode, type, object_id, data, created_at)
    select ${`evt_${tag}_`} || n, ${scope}, case when n % 100 = 7 then 'payment.refunded' else 'payment.settled' end,
      ${`pay_${tag}_`} || n, '{}'::json, ${at}
    from generate_series(1, ${count}) n`,
    sql`insert into refunds (id, account_id, livemode, payment_id, amount_minor, currency, merchant_debit_minor,
      fee_return_minor, rail, status, channel, created_at)
    select ${`rf_${tag}_`} || n, ${scope}, ${`pay_${tag}_`} || n, 5000, 'NGN', 3217500, 0, 'sandbox',
      case when n % 1000 = 7 then 'failed' else 'succeeded' end, 'api', ${at}
    from generate_series(1, ${count}) n where n % 10 = 7`,
    sql`insert into revenue_shares (id, account_id, livemode, payment_id, amount_minor, asset, reference, channel,
      created_at)
    select ${`split_${tag}_`} || n, ${scope}, ${`pay_${tag}_`} || n, 1000000, 'USDC', 'share_' || (n % 3), 'api',
      ${at}
    from generate_series(1, ${count}) n where n % 10 = 5`,
    sql`insert into payouts (id, account_id, livemode, revenue_share_id, amount_minor, asset, to_address, reference,
      status, channel, created_at)
    select ${`po_${tag}_`} || n, ${scope}, case when n % 10 = 5 then ${`split_${tag}_`} || n end, 1000000, 'USDC',
      '0x' || lpad('1', 40, '0'), 'payout_' || (n % 3), case when n % 1000 = 5 then 'failed' else 'settled' end,
      'api', ${at}
    from generate_series(1, ${count}) n where n % 5 = 0`,
    sql`insert into agent_runs (id, account_id, livemode, channel, instruction, model, dry_run, status, reply, steps,
      created_at)
    select ${`run_${tag}_`} || n, ${scope}, 'agent', 'Settle', 'claude', false,
      case when n % 1000 = 0 then 'failed' else 'completed' end, 'Done.', 1, ${at}
    from generate_series(1, ${count}) n where n % 5 = 0`,
    sql`insert into agent_actions (id, account_id, livemode, channel, tool, input, decision, reasons, status,
      created_at, updated_at)
    select ${`act_${tag}_`} || n, ${scope}, case when n % 1000 = 1 then 'mcp' else 'api' end,
      case when n % 1000 = 2 then 'refund_payment' else 'get_payment' end, '{}'::json,
      case when n % 1000 = 3 then 'deny' else 'allow' end, '[]'::json,
      case when n % 1000 = 3 then 'denied' else 'executed' end, ${at}, ${at}
    from generate_series(1, ${count}) n`,
    sql`insert into confirmations (id, account_id, livemode, tool, channel, input, input_hash, summary, decision,
      status, expires_at, created_at)
    select ${`conf_${tag}_`} || n, ${scope}, 'create_payout', 'api', '{}'::json, md5(n::text), 'Pay out', '{}'::json,
      case when n % 1000 = 9 then 'pending' when n % 1000 = 19 then 'rejected' else 'executed' end,
      timestamptz '2100-01-01', ${at}
    from generate_series(1, ${count}) n where n % 3 = 0`,
  ];
}

beforeAll(async () => {
  const handle = await testDatabase();
  runtime = await testRuntime({}, { database: { ...handle, db: handle.db.withPlugin(capture) } });
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
  const other = await testAccount(runtime);
  for (const [accountId, livemode, tag] of [
    [merchant.accountId, false, 'm'],
    [merchant.accountId, true, 'ml'],
    [other.accountId, false, 'o'],
  ] as const) {
    for (const statement of seed(accountId, livemode, tag, 3000)) await statement.execute(handle.db);
  }
  await sql`analyze`.execute(handle.db);
  const rows = await sql<{ name: string; columns: string; unique: boolean }>`
    select c.relname as name, string_agg(a.attname, ',' order by k.ord) as columns, i.indisunique as unique
    from pg_index i
    join pg_class c on c.oid = i.indexrelid
    join unnest(i.indkey) with ordinality k(attnum, ord) on true
    join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
    group by c.relname, i.indisunique`.execute(handle.db);
  indexes = new Map(rows.rows.map((row) => [row.name, { columns: row.columns.split(','), unique: row.unique }]));
  cookie = await signIn(merchant.apiKey);
});

async function signIn(key: string): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/dashboard/sign-in',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    payload: new URLSearchParams({ api_key: key }).toString(),
  });
  expect(res.statusCode, res.body).toBe(303);
  const header = (res as LightMyRequestResponse).headers['set-cookie'];
  const match = /plainpay_session=([^;]+)/.exec(Array.isArray(header) ? header.join('\n') : (header ?? ''));
  return `plainpay_session=${match![1]}`;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Filter?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/**
 * The plan of a query as the app sent it, with everything but an index scan priced out, and sorts
 * too unless `sorts` (a unique lookup: its one row needs no order, but the planner still sorts it).
 */
async function planOf(query: CompiledQuery, sorts = false): Promise<PlanNode> {
  const { db } = await testDatabase();
  return db.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx);
    await sql`set local enable_bitmapscan = off`.execute(trx);
    if (!sorts) await sql`set local enable_sort = off`.execute(trx);
    const result = await trx.executeQuery<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      CompiledQuery.raw(`explain (format json) ${query.sql}`, [...query.parameters]),
    );
    return result.rows[0]!['QUERY PLAN'][0].Plan;
  });
}

/**
 * The list queries of one request: those that read a page in list order. A query built inside
 * another (a union's arm) is recorded on its own too: only the whole is sent, so only it counts.
 */
function listQueries(queries: CompiledQuery[]): CompiledQuery[] {
  const text = (q: CompiledQuery) => q.sql.replace(/\$\d+/g, '$');
  return queries.filter(
    (q) =>
      /order by "created_at" (desc|asc), "id" (desc|asc)/.test(q.sql) &&
      !queries.some((outer) => outer !== q && text(outer).includes(text(q))),
  );
}

interface Case {
  /** What the request is, API or dashboard. */
  url: string;
  table: string;
  /** The columns the request filters by, which the Index Cond must hold. */
  filters?: string[];
  /** What may stay in a Filter: a condition the index cannot hold (a time compared with now). */
  residual?: RegExp;
  /**
   * A filter that names at most one row: read through this unique index, every column of it in the
   * Index Cond. One row costs the same at any size; sorting it is free.
   */
  unique?: string;
  dashboard?: boolean;
}

// The keyset columns are checked on a second page (starting_after / ending_before) of each table.
const CASES: Case[] = [
  { url: '/v1/payments', table: 'payments' },
  { url: '/v1/payments?status=refunded', table: 'payments', filters: ['status'] },
  { url: '/v1/payments?reference=order_m_10', table: 'payments', unique: 'payments_reference' },
  { url: '/v1/payments?created_gte=2025-12-31T12:00:00Z', table: 'payments', filters: ['created_at'] },
  {
    url: '/v1/payments?status=refunded&created_gte=2025-12-30T00:00:00Z&created_lte=2025-12-31T00:00:00Z',
    table: 'payments',
    filters: ['status', 'created_at'],
  },
  { url: '/v1/payments?starting_after=pay_m_30', table: 'payments', filters: ['created_at', 'id'] },
  { url: '/v1/payments?status=refunded&ending_before=pay_m_307', table: 'payments', filters: ['status', 'created_at'] },
  { url: '/v1/refunds', table: 'refunds' },
  { url: '/v1/refunds?status=failed', table: 'refunds', filters: ['status'] },
  { url: '/v1/refunds?payment_id=pay_m_17', table: 'refunds', filters: ['payment_id'] },
  { url: '/v1/refunds?starting_after=rf_m_17', table: 'refunds', filters: ['created_at'] },
  { url: '/v1/payouts', table: 'payouts' },
  { url: '/v1/payouts?status=failed', table: 'payouts', filters: ['status'] },
  { url: '/v1/payouts?reference=payout_1', table: 'payouts', filters: ['reference'] },
  { url: '/v1/payouts?revenue_share=split_m_15', table: 'payouts', filters: ['revenue_share_id'] },
  { url: '/v1/payouts?created_lte=2025-12-31T00:00:00Z', table: 'payouts', filters: ['created_at'] },
  { url: '/v1/payouts?ending_before=po_m_100', table: 'payouts', filters: ['created_at'] },
  { url: '/v1/revenue_shares', table: 'revenue_shares' },
  { url: '/v1/revenue_shares?reference=share_1', table: 'revenue_shares', filters: ['reference'] },
  { url: '/v1/revenue_shares?payment_id=pay_m_15', table: 'revenue_shares', unique: 'revenue_shares_payment' },
  { url: '/v1/revenue_shares?starting_after=split_m_15', table: 'revenue_shares', filters: ['created_at'] },
  { url: '/v1/events', table: 'events' },
  { url: '/v1/events?type=payment.refunded', table: 'events', filters: ['type'] },
  { url: '/v1/events?object_id=pay_m_10', table: 'events', filters: ['object_id'] },
  { url: '/v1/events?starting_after=evt_m_10', table: 'events', filters: ['created_at'] },
  // Pending and not yet lapsed: lapsed ones are few (the expiry job marks them expired).
  { url: '/v1/confirmations', table: 'confirmations', filters: ['status'], residual: /expires_at/ },
  { url: '/agent/runs', table: 'agent_runs' },
  { url: '/agent/runs?starting_after=run_m_100', table: 'agent_runs', filters: ['created_at'] },
  { url: '/agent/actions', table: 'agent_actions' },
  { url: '/agent/actions?status=denied', table: 'agent_actions', filters: ['status'] },
  // Held, with or without a lapsed confirmation: a subquery per held action, which the index bounds.
  { url: '/agent/actions?status=held', table: 'agent_actions', filters: ['status'], residual: /SubPlan/ },
  { url: '/agent/actions?tool=refund_payment', table: 'agent_actions', filters: ['tool'] },
  { url: '/agent/actions?decision=deny', table: 'agent_actions', filters: ['decision'] },
  { url: '/agent/actions?channel=mcp', table: 'agent_actions', filters: ['channel'] },
  { url: '/agent/actions?created_gte=2025-12-31T00:00:00Z', table: 'agent_actions', filters: ['created_at'] },
  { url: '/agent/actions?starting_after=act_m_10', table: 'agent_actions', filters: ['created_at'] },
  { url: '/keys', table: 'api_keys' },
  { url: '/v1/webhook_endpoints', table: 'webhook_endpoints' },
  { url: '/dashboard/payments', table: 'payments', dashboard: true },
  { url: '/dashboard/payments?status=refunded', table: 'payments', filters: ['status'], dashboard: true },
  { url: '/dashboard/payments?reference=order_m_10', table: 'payments', unique: 'payments_reference', dashboard: true },
  { url: '/dashboard/payouts?status=failed', table: 'payouts', filters: ['status'], dashboard: true },
  { url: '/dashboard/runs', table: 'agent_runs', dashboard: true },
  { url: '/dashboard/runs?status=failed', table: 'agent_runs', filters: ['status'], dashboard: true },
  {
    url: '/dashboard/confirmations',
    table: 'confirmations',
    filters: ['status'],
    residual: /expires_at/,
    dashboard: true,
  },
  { url: '/dashboard/confirmations?status=all', table: 'confirmations', dashboard: true },
  { url: '/dashboard/confirmations?status=rejected', table: 'confirmations', filters: ['status'], dashboard: true },
  {
    url: '/dashboard/confirmations?status=expired',
    table: 'confirmations',
    filters: ['status'],
    residual: /expires_at/,
    dashboard: true,
  },
  { url: '/dashboard/actions?decision=deny', table: 'agent_actions', filters: ['decision'], dashboard: true },
  // System steps hidden: an index of exactly the rows listed (migration 030).
  { url: '/dashboard/actions', table: 'agent_actions', dashboard: true },
  { url: '/dashboard/webhooks?type=payment.refunded', table: 'events', filters: ['type'], dashboard: true },
];

describe('every list and filter reads an account-scoped index in list order', () => {
  it.each(CASES)('$url', async (c) => {
    captured = [];
    const res = await app.inject({
      method: 'GET',
      url: c.url,
      headers: c.dashboard ? { cookie } : bearer(merchant.apiKey),
    });
    expect(res.statusCode, res.body).toBe(200);
    const queries = listQueries(captured).filter((q) => q.sql.includes(`from "${c.table}"`));
    expect(queries.length, `no list query on ${c.table} among:\n${captured.map((q) => q.sql).join('\n')}`).toBe(1);
    for (const query of queries) {
      const plan = await planOf(query, c.unique !== undefined);
      const all = nodes(plan);
      const shown = `${query.sql}\n${JSON.stringify(plan, null, 1)}`;
      if (c.unique !== undefined) {
        const scan = all.find((n) => n['Relation Name'] === c.table);
        expect(scan?.['Index Name'], shown).toBe(c.unique);
        const index = indexes.get(c.unique)!;
        expect(index.unique, shown).toBe(true);
        for (const column of index.columns) expect(scan!['Index Cond'], shown).toContain(column);
        continue;
      }
      expect(
        all.filter((n) => n['Node Type'].includes('Sort')),
        shown,
      ).toEqual([]);
      const scans = all.filter((n) => n['Relation Name'] === c.table);
      expect(scans.length, shown).toBeGreaterThan(0);
      for (const scan of scans) {
        expect(scan['Node Type'], shown).toBe('Index Scan');
        expect(indexes.get(scan['Index Name']!)?.columns.slice(0, 2), shown).toEqual(['account_id', 'livemode']);
        for (const column of c.filters ?? []) expect(scan['Index Cond'], shown).toContain(column);
        if (scan.Filter !== undefined) expect(scan.Filter, shown).toMatch(c.residual ?? /^$/);
      }
    }
  });
});

// The approvals screen's expired filter reads two ranges merged (see its plan above): what it lists.
it('the dashboard lists as expired the confirmations marked expired and the pending ones past expiry, newest first', async () => {
  const owner = await testAccount(runtime);
  const now = runtime.clock.now().getTime();
  const rows: Array<[id: string, status: string, expiresInS: number, ageS: number]> = [
    ['conf_exp_a', 'expired', -60, 10],
    ['conf_exp_b', 'pending', -1, 20],
    ['conf_exp_c', 'pending', 600, 30],
    ['conf_exp_d', 'executed', -60, 40],
    ['conf_exp_e', 'expired', -60, 50],
    ['conf_exp_f', 'rejected', -60, 60],
  ];
  const { db } = await testDatabase();
  for (const [id, status, expiresInS, ageS] of rows) {
    await sql`insert into confirmations (id, account_id, livemode, tool, channel, input, input_hash, summary,
      decision, status, expires_at, created_at)
      values (${id}, ${owner.accountId}, false, 'create_payout', 'api', '{}'::json, ${id}, 'Pay out', '{}'::json,
        ${status}, ${new Date(now + expiresInS * 1000)}, ${new Date(now - ageS * 1000)})`.execute(db);
  }
  const res = await app.inject({
    method: 'GET',
    url: '/dashboard/confirmations?status=expired',
    headers: { cookie: await signIn(owner.apiKey) },
  });
  expect(res.statusCode, res.body).toBe(200);
  const listed = [...res.body.matchAll(/data-confirmation-id="([^"]+)"/g)].map((m) => m[1]);
  expect(listed).toEqual(['conf_exp_a', 'conf_exp_b', 'conf_exp_e']);
});
