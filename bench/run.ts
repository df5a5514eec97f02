// `npm run bench -- <name>`: runs one named benchmark and prints a table whose figures are also
// shown as ratios against the baseline measured in the same run; `npm run bench` runs them all.
// Adding a benchmark is one file and one line in BENCHMARKS. Exit code 1 when a benchmark's check
// fails, 2 for an unknown name.

import { checkoutBench } from './checkout.ts';
import { footprintBench } from './footprint.ts';
import { paymentsBench, pingBench } from './http.ts';
import { listsBench } from './lists.ts';
import { settlementBench } from './settlement.ts';
import { startupBench } from './startup.ts';
import { webhooksBench } from './webhooks.ts';

export interface BenchRow {
  label: string;
  value: number;
  unit: string;
  /** Show value / baseline.value in the ratio column. */
  ratio?: boolean;
  /** Show value / against.value instead (e.g. a p99 against the baseline's p99). */
  against?: BenchRow;
}

export interface BenchResult {
  title: string;
  /** The yardstick measured in the same run; ratios are against it. */
  baseline: BenchRow;
  rows: BenchRow[];
  notes: string[];
  checks: { label: string; pass: boolean }[];
}

const BENCHMARKS: Readonly<Record<string, { description: string; run: () => Promise<BenchResult> }>> = {
  payments: {
    description: 'POST /v1/payments on Postgres vs a bare fastify route with one pg insert',
    run: paymentsBench,
  },
  ping: { description: 'GET /v1/ping vs a bare fastify hello-world', run: pingBench },
  checkout: { description: 'GET /checkout/:id vs fastify + one pg select; the page on the wire', run: checkoutBench },
  settlement: {
    description: 'gas per settled payment (500 payments, 20 addresses) vs one plain ERC-20 transfer',
    run: settlementBench,
  },
  webhooks: {
    description: 'delay from payment.settled commit to the first delivery attempt vs a direct POST',
    run: webhooksBench,
  },
  lists: { description: 'list and filter latency at 100k payments in the account vs at 1k', run: listsBench },
  footprint: { description: 'idle RSS and CPU of embedded serve vs a fastify hello-world', run: footprintBench },
  startup: {
    description: 'embedded default (fresh / existing data dir) to ready vs node -e hello-world',
    run: startupBench,
  },
};

function formatNumber(value: number): string {
  return Number.isInteger(value)
    ? value.toLocaleString('en-US')
    : value.toLocaleString('en-US', { maximumFractionDigits: 2 });
}

export function renderTable(result: BenchResult): string {
  const header = ['measure', 'value', 'unit', `× ${result.baseline.label}`];
  const lines = [result.baseline, ...result.rows].map((row) => [
    row.label,
    formatNumber(row.value),
    row.unit,
    row === result.baseline
      ? '1.000'
      : row.against
        ? (row.value / row.against.value).toFixed(3)
        : row.ratio
          ? (row.value / result.baseline.value).toFixed(3)
          : '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]): string =>
    `| ${cells.map((c, i) => (i === 1 || i === 3 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ')} |`;
  return [
    result.title,
    '',
    fmt(header),
    `|${widths.map((w, i) => (i === 1 || i === 3 ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`,
    ...lines.map(fmt),
    '',
    ...result.notes,
    ...result.checks.map((c) => `${c.pass ? 'PASS' : 'FAIL'}  ${c.label}`),
  ].join('\n');
}

async function main(): Promise<number> {
  const name = process.argv[2];
  const names = name === undefined ? Object.keys(BENCHMARKS) : [name];
  if (names.some((n) => !BENCHMARKS[n])) {
    console.error(`usage: npm run bench [-- <name>]   (no name: all of them)\n\nbenchmarks:`);
    for (const [key, b] of Object.entries(BENCHMARKS)) console.error(`  ${key.padEnd(12)} ${b.description}`);
    return 2;
  }
  let passed = true;
  for (const n of names) {
    const result = await BENCHMARKS[n]!.run();
    console.log(`${renderTable(result)}\n`);
    passed &&= result.checks.every((c) => c.pass);
  }
  return passed ? 0 : 1;
}

process.exitCode = await main();
