// List latency (issue 15, item 4): every list and filter of the API, through the real HTTP API
// (`plainpay serve --role api` in a child process on a scratch Postgres database), on two accounts
// side by side: one whose test mode holds 1k payments, one with 100k, among rows of other accounts
// and of a live mode. A list answered by an account-scoped index scan in list order costs the same
// page at either size; one that scans or sorts the account's rows grows a hundredfold. The
// baseline of each list is its own latency on the 1k account, measured in turns with the 100k one.
//
// Rows are written with SQL (generate_series), not through the API: 200k payments through the API
// would take longer than the whole run. Their shapes follow the real ones closely enough for the
// API to present them. Two kinds of filter value are measured: common ones spread over all rows
// (1% refunded payments, …), which fill a page at either size, and rare ones that only a few of
// the newest rows hold (pending payments, queued payouts, a failed run, a denied action: what a
// merchant looks for), the same few matches at 1k and at 100k. The rare ones are the test: without
// an index that starts at the value, a scan reads every row of the account to find that fewer than
// a page match, so it costs a hundred times more at 100k.

import { request } from 'node:http';
import { Agent } from 'node:http';
import pg from 'pg';
import type { BenchResult, BenchRow } from './run.ts';
import { createAccount } from '../src/accounts/create-account.ts';
import { createSecretBox } from '../src/core/secret-box.ts';
import { connectDatabase } from '../src/db/connect.ts';
import { machineNote, percentile, setUpDatabase, sortedNumbers, startPlainpay } from './support.ts';

const SMALL = 1_000;
const LARGE = 100_000;
/** Payments of the other accounts (spread over OTHER_ACCOUNTS) and of the account's live mode. */
const OTHERS = 50_000;
const OTHER_ACCOUNTS = 50;
const LIVE = 10_000;
const WARMUP = 20;
const SAMPLES = 100;
const MAX_RATIO = 1.5;

/**
 * Seeds `count` payments of one account and mode, and what hangs off them in
 * proportion: 2 events each, a refund per refunded payment (2%), a payout per 10 (a revenue-share
 * leg per 50), a revenue share per 50, an agent run per 20 and an action per payment, a confirmation
 * per 100. Ids are `<kind>_<tag>_<n>`; payment n was created n minutes before 2026-01-01.
 */
function seedSql(accountId: string, livemode: boolean, tag: string, count: number): string {
  const scope = `'${accountId}', ${livemode}`;
  const at = (n: string) => `timestamptz '2026-01-01T00:00:00Z' - (${n}) * interval '1 minute'`;
  // A value only some of the newest 1k rows hold: the same few matches at 1k and at 100k.
  const recent = (condition: string) => `(n <= ${SMALL} and ${condition})`;
  return `
insert into payments (id, account_id, livemode, status, amount_minor, currency, redirect_url, reference,
  description, creation_hash, expires_at, quote_rate, quote_source, fee_bps, settlement_asset,
  gross_settlement_minor, fee_minor, settlement_minor, refunded_minor, created_at, updated_at)
select 'pay_${tag}_' || n, ${scope},
  case when n % 100 = 0 then 'refunded' when n % 100 = 1 then 'partially_refunded' when ${recent('n % 200 = 2')} then 'pending'
       when n % 20 = 3 then 'expired' else 'settled' end,
  5000, 'NGN', 'https://shop.example/thanks', 'order_${tag}_' || n, 'Order ' || n, md5(n::text),
  ${at('n')} + interval '1 hour', '0.00065', 'fixed', 100, 'USDC', 3250000, 32500, 3217500,
  case when n % 100 = 0 then 5000 when n % 100 = 1 then 1000 else 0 end, ${at('n')}, ${at('n')}
from generate_series(1, ${count}) n;

insert into events (id, account_id, livemode, type, object_id, data, created_at)
select 'evt_${tag}_' || n || '_' || k, ${scope},
  case when k = 0 then 'payment.paid' when n % 100 = 0 then 'payment.refunded'
       when ${recent('n % 200 = 7')} then 'payment.late_success' else 'payment.settled' end,
  'pay_${tag}_' || n, ('{"object":{"id":"pay_${tag}_' || n || '"}}')::json, ${at('n')} + k * interval '1 second'
from generate_series(1, ${count}) n, generate_series(0, 1) k;

insert into refunds (id, account_id, livemode, payment_id, amount_minor, currency, merchant_debit_minor,
  fee_return_minor, rail, status, channel, created_at)
select 'rf_${tag}_' || n, ${scope}, 'pay_${tag}_' || n, case when n % 100 = 0 then 5000 else 1000 end, 'NGN',
  3217500, 0, 'sandbox', case when ${recent('n % 200 = 0')} then 'failed' else 'succeeded' end,
  'api', ${at('n')} + interval '10 seconds'
from generate_series(1, ${count}) n where n % 100 in (0, 1);

insert into revenue_shares (id, account_id, livemode, payment_id, amount_minor, asset, reference, channel, created_at)
select 'split_${tag}_' || n, ${scope}, 'pay_${tag}_' || n, 1000000, 'USDC', 'share_${tag}_' || n, 'api',
  ${at('n')} + interval '20 seconds'
from generate_series(1, ${count}) n where n % 50 = 5;

insert into payouts (id, account_id, livemode, revenue_share_id, amount_minor, asset, to_address, reference,
  status, channel, created_at)
select 'po_${tag}_' || n, ${scope}, case when n % 50 = 5 then 'split_${tag}_' || n end, 1000000, 'USDC',
  '0x' || lpad(to_hex(n % 20 + 1), 40, '0'), 'payout_${tag}_' || n,
  case when n % 1000 = 5 then 'failed' when ${recent('n % 200 = 15')} then 'queued' else 'settled' end, 'api',
  ${at('n')} + interval '30 seconds'
from generate_series(1, ${count}) n where n % 10 = 5;

insert into agent_runs (id, account_id, livemode, channel, instruction, model, dry_run, status, reply, steps, created_at)
select 'run_${tag}_' || n, ${scope}, 'agent', 'Settle order ' || n, 'claude', false,
  case when ${recent('n % 200 = 0')} then 'failed' else 'completed' end, 'Done.', 1, ${at('n')} + interval '40 seconds'
from generate_series(1, ${count}) n where n % 20 = 0;

insert into agent_actions (id, account_id, livemode, run_id, channel, tool, input, decision, reasons, status,
  result, created_at, updated_at)
select 'act_${tag}_' || n, ${scope}, case when n % 20 = 0 then 'run_${tag}_' || n end,
  case when n % 20 = 0 then 'agent' when ${recent('n % 200 = 150')} then 'mcp' else 'api' end,
  case when ${recent('n % 200 = 50')} then 'refund_payment' else 'get_payment' end,
  ('{"payment_id":"pay_${tag}_' || n || '"}')::json,
  case when ${recent('n % 200 = 100')} then 'deny' else 'allow' end, '[]',
  case when ${recent('n % 200 = 100')} then 'denied' when ${recent('n % 200 = 0')} then 'failed' else 'executed' end, null,
  ${at('n')} + interval '50 seconds', ${at('n')} + interval '50 seconds'
from generate_series(1, ${count}) n;

insert into confirmations (id, account_id, livemode, tool, channel, input, input_hash, summary, decision,
  status, expires_at, created_at)
select 'conf_${tag}_' || n, ${scope}, 'create_payout', 'api', '{}', md5(n::text), 'Pay out', '{}',
  case when ${recent('n % 500 = 0')} then 'pending' else 'executed' end, timestamptz '2100-01-01', ${at('n')}
from generate_series(1, ${count}) n where n % 100 = 0;
`;
}

/** The lists measured: each a path, the ids it names among the account's newest 1k (both accounts have them). */
function lists(tag: string): { label: string; path: string }[] {
  return [
    { label: 'payments', path: '/v1/payments' },
    { label: 'payments ?status=refunded', path: '/v1/payments?status=refunded' },
    { label: 'payments ?status=pending (rare)', path: '/v1/payments?status=pending' },
    { label: 'payments ?reference', path: `/v1/payments?reference=order_${tag}_500` },
    {
      label: 'payments ?created_gte&created_lte',
      path: '/v1/payments?created_gte=2025-12-31T12:00:00Z&created_lte=2025-12-31T18:00:00Z',
    },
    { label: 'payments ?status&created_gte', path: '/v1/payments?status=refunded&created_gte=2025-12-30T00:00:00Z' },
    { label: 'payments ?starting_after', path: `/v1/payments?starting_after=pay_${tag}_100` },
    { label: 'payments ?ending_before', path: `/v1/payments?ending_before=pay_${tag}_900` },
    { label: 'refunds', path: '/v1/refunds' },
    { label: 'refunds ?status=failed (rare)', path: '/v1/refunds?status=failed' },
    { label: 'refunds ?payment_id', path: `/v1/refunds?payment_id=pay_${tag}_500` },
    { label: 'payouts', path: '/v1/payouts' },
    { label: 'payouts ?status=failed', path: '/v1/payouts?status=failed' },
    { label: 'payouts ?status=queued (rare)', path: '/v1/payouts?status=queued' },
    { label: 'payouts ?reference', path: `/v1/payouts?reference=payout_${tag}_505` },
    { label: 'payouts ?revenue_share', path: `/v1/payouts?revenue_share=split_${tag}_505` },
    { label: 'revenue_shares', path: '/v1/revenue_shares' },
    { label: 'revenue_shares ?reference', path: `/v1/revenue_shares?reference=share_${tag}_505` },
    { label: 'revenue_shares ?payment_id', path: `/v1/revenue_shares?payment_id=pay_${tag}_505` },
    { label: 'events', path: '/v1/events' },
    { label: 'events ?type=payment.refunded', path: '/v1/events?type=payment.refunded' },
    { label: 'events ?type=payment.late_success (rare)', path: '/v1/events?type=payment.late_success' },
    { label: 'events ?object_id', path: `/v1/events?object_id=pay_${tag}_500` },
    { label: 'confirmations (pending, rare)', path: '/v1/confirmations' },
    { label: 'agent runs', path: '/agent/runs' },
    { label: 'agent actions', path: '/agent/actions?limit=20' },
    { label: 'agent actions ?status=denied (rare)', path: '/agent/actions?limit=20&status=denied' },
    { label: 'agent actions ?status=failed (rare)', path: '/agent/actions?limit=20&status=failed' },
    { label: 'agent actions ?tool (rare)', path: '/agent/actions?limit=20&tool=refund_payment' },
    { label: 'agent actions ?decision=deny (rare)', path: '/agent/actions?limit=20&decision=deny' },
    { label: 'agent actions ?channel=mcp (rare)', path: '/agent/actions?limit=20&channel=mcp' },
  ];
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/** One GET; resolves with its time in ms, rejects unless 200. */
function timedGet(base: string, path: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request(`${base}${path}`, { agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        if (res.statusCode !== 200) {
          reject(new Error(`GET ${path}: ${res.statusCode} ${Buffer.concat(chunks).toString().slice(0, 300)}`));
        } else resolve(performance.now() - started);
      });
    });
    req.on('error', reject);
    req.end();
  });
}

interface Latency {
  p50: number;
  p99: number;
}

/** Each list's latencies on the two accounts, and the median of its paired ratios (100k / 1k). */
interface Measurement {
  small: Latency[];
  large: Latency[];
  ratios: number[];
}

/** An account to measure: its key and the paths of its lists (ids named by its own tag). */
interface Measured {
  key: string;
  paths: string[];
}

/**
 * Each list's latency on each account, one request at a time: WARMUP unmeasured, then SAMPLES
 * measured, list by list and account by account in turns (the order of the two accounts swapped
 * every round), so that a busy moment of the machine weighs on both sizes alike.
 */
async function measureLists(base: string, accounts: [Measured, Measured]): Promise<Measurement> {
  for (const account of accounts) {
    for (const path of account.paths) for (let i = 0; i < WARMUP; i++) await timedGet(base, path, account.key);
  }
  const times = accounts.map((account) => account.paths.map(() => [] as number[]));
  for (let i = 0; i < SAMPLES; i++) {
    for (let j = 0; j < accounts[0].paths.length; j++) {
      for (const a of i % 2 === 0 ? [0, 1] : [1, 0]) {
        const account = accounts[a]!;
        times[a]![j]!.push(await timedGet(base, account.paths[j]!, account.key));
      }
    }
  }
  const latencies = times.map((perList) =>
    perList.map((t) => {
      const sorted = sortedNumbers(t);
      return { p50: round2(percentile(sorted, 50)), p99: round2(percentile(sorted, 99)) };
    }),
  );
  // The 1k and the 100k request of one round ran back to back, under the same load: the median of
  // their ratios is steadier on a busy machine than the ratio of two medians.
  const ratios = accounts[0].paths.map((_, j) => {
    const paired = times[0]![j]!.map((small, i) => times[1]![j]![i]! / small);
    return round2(percentile(sortedNumbers(paired), 50));
  });
  return { small: latencies[0]!, large: latencies[1]!, ratios };
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

export async function listsBench(): Promise<BenchResult> {
  const machine = machineNote();
  // The account of setUpDatabase holds 1k payments; a second one, made here, 100k.
  const setup = await setUpDatabase('lists');
  const client = new pg.Client({ connectionString: setup.database.url });
  await client.connect();
  try {
    const handle = await connectDatabase({ kind: 'postgres', url: setup.database.url });
    const large = await createAccount(handle.db, createSecretBox(Buffer.from(setup.masterKey, 'base64')), {
      name: 'Bench merchant, 100k payments',
      livemode: false,
    }).finally(() => handle.close());

    const started = performance.now();
    const others = Array.from({ length: OTHER_ACCOUNTS }, (_, i) => `acct_lists_other_${i}`);
    await client.query(`insert into accounts (id, name) select unnest($1::text[]), 'Other merchant'`, [others]);
    const perOther = OTHERS / OTHER_ACCOUNTS;
    for (const [i, other] of others.entries()) {
      await client.query(seedSql(other, i % 2 === 0, `o${i}`, perOther));
    }
    await client.query(seedSql(setup.accountId, true, 'live', LIVE));
    await client.query(seedSql(setup.accountId, false, 'small', SMALL));
    await client.query(seedSql(large.account, false, 'large', LARGE));
    await client.query('analyze');
    const seeding = `seeding: ${Math.round(performance.now() - started)} ms`;

    const labels = lists('small');
    const server = await startPlainpay(setup, 'api');
    let measured: Measurement;
    try {
      measured = await measureLists(server.url, [
        { key: setup.apiKey, paths: labels.map((l) => l.path) },
        { key: large.api_key, paths: lists('large').map((l) => l.path) },
      ]);
    } finally {
      await server.server.stop();
    }

    const rows: BenchRow[] = [];
    const checks: { label: string; pass: boolean }[] = [];
    for (const [i, list] of labels.entries()) {
      const small50: BenchRow = { label: `${list.label}, 1k p50`, value: measured.small[i]!.p50, unit: 'ms' };
      const large50: BenchRow = {
        label: `${list.label}, 100k p50`,
        value: measured.large[i]!.p50,
        unit: 'ms',
        against: small50,
      };
      const small99: BenchRow = { label: `${list.label}, 1k p99`, value: measured.small[i]!.p99, unit: 'ms' };
      const large99: BenchRow = {
        label: `${list.label}, 100k p99`,
        value: measured.large[i]!.p99,
        unit: 'ms',
        against: small99,
      };
      rows.push(small50, large50, small99, large99);
      const ratio = measured.ratios[i]!;
      checks.push({
        label: `${list.label}: 100k / 1k, median of paired requests ${ratio.toFixed(2)}× (≤ ${MAX_RATIO})`,
        pass: ratio <= MAX_RATIO,
      });
    }
    const baseline: BenchRow = { label: 'GET /v1/payments, 1k p50', value: measured.small[0]!.p50, unit: 'ms' };
    return {
      title: `List latency, ${SMALL.toLocaleString('en-US')} vs ${LARGE.toLocaleString('en-US')} payments in the account's mode (ratio column: 100k against the same list's 1k)`,
      baseline,
      rows,
      notes: [
        machine,
        `setup: plainpay serve --role api in a child process on a scratch Postgres database; two test-mode accounts, one with 1k payments and one with 100k, measured side by side; one request at a time on a kept-alive connection, ${WARMUP} warm-up then ${SAMPLES} measured per list and account, taking turns; default page sizes (agent actions: limit=20)`,
        `data around them: ${OTHERS.toLocaleString('en-US')} payments over ${OTHER_ACCOUNTS} other accounts and ${LIVE.toLocaleString('en-US')} in the 1k account's live mode; per payment 2 events, an agent action, and refunds, payouts, revenue shares, runs and confirmations in proportion (bench/lists.ts seedSql)`,
        seeding,
      ],
      checks,
    };
  } finally {
    await client.end();
    await setup.database.drop();
  }
}
