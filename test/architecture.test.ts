// The shape docs/architecture.md promises, checked over the real import graph
// (test/support/architecture.ts): the money writes are imported only by tools/; no raw write to a
// money table anywhere else; tools/ imports nothing from the workers and hosts above it; no module
// imports itself in a circle; core imports neither the runtime nor the policy nor the pipeline;
// policy never runs a tool; no tool reaches for the runtime. Each way past the money rules that a
// line-by-line search missed is kept as a small tree in test/fixtures/architecture/, and the check
// must find it.

import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  analyseTree,
  checkArchitecture,
  cycles,
  describe as line,
  type Finding,
  type Graph,
} from './support/architecture.ts';

const ROOT = join(import.meta.dirname, '..');
const FIXTURES = join(import.meta.dirname, 'fixtures', 'architecture');

let findings: Finding[] = [];
let graph: Graph = { edges: new Map() };
beforeAll(() => {
  ({ findings, graph } = analyseTree(ROOT));
}, 120_000);

const found = (rule: Finding['rule']): string[] =>
  findings
    .filter((f) => f.rule === rule)
    .map(line)
    .sort();

/** Every import (types too) from files under `from` of files under `to`, as "file → target". */
function importsBetween(from: string, to: string): string[] {
  const out: string[] = [];
  for (const [file, edges] of graph.edges) {
    if (!file.startsWith(`${from}/`) || file.endsWith('.test.ts')) continue;
    for (const { target } of edges) if (target.startsWith(`${to}/`) || target === to) out.push(`${file} → ${target}`);
  }
  return out;
}

describe('the architecture', () => {
  it('reaches the money writes only from tools/ (aliases, namespaces and re-exports followed)', () => {
    expect(found('money import')).toEqual([]);
  });

  it('writes a money table nowhere but in the money writes', () => {
    expect(found('money write')).toEqual([]);
  });

  it('has tools/ import nothing from src/settlement, src/payments or src/checkout', () => {
    expect(found('tools above')).toEqual([]);
  });

  it('has no import cycles', () => {
    expect(found('cycle')).toEqual([]);
  });

  it('finds a cycle when there is one (the check itself)', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    expect(cycles(graph)).toHaveLength(1);
  });

  it('core imports neither the runtime, the policy nor the pipeline', () => {
    expect(importsBetween('src/core', 'src/runtime.ts')).toEqual([]);
    expect(importsBetween('src/core', 'src/policy')).toEqual([]);
    expect(importsBetween('src/core', 'src/pipeline')).toEqual([]);
  });

  it('only the composition roots take the whole runtime; workers and hosts are given what they use', () => {
    // The CLI, the API host's assembly and the workers' start build or hold the runtime and hand
    // each part its narrow services (docs/architecture.md, "What each part is given").
    const roots = (importer: string): boolean =>
      importer.startsWith('src/cli/') || ['src/http/app.ts', 'src/workers.ts', 'src/worker-job.ts'].includes(importer);
    const importers = importsBetween('src', 'src/runtime.ts').map((edge) => edge.split(' → ')[0] as string);
    expect(importers.filter((importer) => !roots(importer))).toEqual([]);
  });

  it('policy decides and never runs a tool; tools never reach the runtime or the pipeline', () => {
    expect(importsBetween('src/policy', 'src/pipeline')).toEqual([]);
    expect(importsBetween('tools', 'src/runtime.ts')).toEqual([]);
    expect(importsBetween('tools', 'src/pipeline')).toEqual([]);
  });
});

describe('the check finds each way past it (test/fixtures/architecture/)', () => {
  const fixture = (name: string): string[] => checkArchitecture(join(FIXTURES, name)).map(line);

  it.each([
    ['aliased-import', 'money import: src/settlement/worker.ts: imports src/db/money-writes/ledger.ts'],
    ['namespace-import', 'money import: src/payments/expiry.ts: imports src/db/money-writes/ledger.ts'],
    ['dynamic-import', 'money import: src/payments/expiry.ts: imports src/db/money-writes/ledger.ts'],
    ['table-in-variable', "money write: src/payments/expiry.ts: updateTable('payments') sets status = 'expired'"],
    ['split-call', "money write: src/settlement/worker.ts: updateTable('payouts') sets status = 'settled'"],
    ['sql-table', "money write: src/payments/rails/refunds.ts: sql`…`: update refunds sets status = 'failed'"],
    [
      'sql-raw',
      'money write: src/settlement/worker.ts: SQL text: insert into ledger_entries',
      'money write: src/settlement/worker.ts: sql.raw: insert into ledger_entries with account, amount',
    ],
    [
      're-export',
      'money import: src/http/routes/treasury.ts: imports postLedger from tools/helpers.ts, which is not a tool',
      'money import: src/http/routes/treasury.ts: imports tools/helpers.ts, which re-exports recordMoney, postLedger',
    ],
    [
      'constant-money-helper',
      'money import: src/http/routes/treasury.ts: imports LIMITS from tools/helper.ts, which is not a tool',
      'money import: src/http/routes/treasury.ts: imports MONEY from tools/helper.ts, which is not a tool',
      'money import: src/http/routes/treasury.ts: imports POST_IT from tools/helper.ts, which is not a tool',
    ],
    [
      'dynamic-tools-import',
      'money import: src/payments/expiry.ts: imports tools/helper.ts at run time, all of it, not only its tools',
    ],
    [
      'export-from-tools',
      'money import: src/payments/all.ts: re-exports all of tools/helper.ts, not only its tools',
      'money import: src/payments/rails/credit.ts: re-exports credit from tools/helper.ts, which is not a tool',
    ],
    [
      'payment-attempts',
      "money write: src/checkout/attempts.ts: updateTable('payment_attempts') sets checked_at, outcome = 'succeeded'",
    ],
    [
      'settlement-batches',
      "money write: src/settlement/batch-rows.ts: updateTable('settlement_batches') sets status = 'confirmed'",
    ],
    [
      'late-success-refund',
      "money write: src/payments/rails/reconcile.ts: updateTable('payment_attempts') sets refund_status = 'refunded'",
    ],
    [
      'second-set',
      "money write: src/payments/rails/lease.ts: updateTable('payment_attempts') sets checked_at, refund_status = 'refunded'",
      "money write: src/payments/rails/lease.ts: updateTable('payment_attempts') sets what it cannot read",
      "money write: src/payments/rails/lease.ts: updateTable('payment_attempts') sets what it cannot read",
      "money write: src/payments/rails/lease.ts: updateTable('refunds') sets what it cannot read",
    ],
    ['tools-above', 'tools above: tools/system/settle.ts: imports src/settlement/schedules.ts'],
    [
      'worker-batch-writes',
      "money write: src/settlement/batches.ts: updateTable('transfers') sets batch_id, failed_at, status = 'batched', updated_at",
      "money write: src/settlement/chain-health.ts: updateTable('transfers') sets status = 'batched' | 'failed', updated_at",
      "money write: src/settlement/relayer.ts: updateTable('transfers') sets status = 'confirmed', updated_at",
      "money write: src/settlement/relayer.ts: updateTable('transfers') sets status = 'sent', updated_at",
    ],
    [
      'cycle',
      'cycle: tools/system/payout-outcomes.ts: circle of imports: tools/system/payout-outcomes.ts → tools/system/transfer-outcomes.ts',
    ],
  ])('%s', (name, ...expected) => {
    expect(fixture(name).sort()).toEqual(expected);
  });

  it('passes what the rules allow: a tool posting, a route running it, a lease, a read, a log message', () => {
    expect(fixture('clean')).toEqual([]);
  });
});
