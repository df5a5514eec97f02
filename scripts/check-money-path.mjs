#!/usr/bin/env node
// The one money path (docs/architecture.md): every ledger posting and every money status change is
// made by a tool (tools/, run through executeTool in src/pipeline/execute-tool.ts). This lists every
// place outside tools/ that writes money: a ledger posting, a payment's status, a payout, a refund,
// a revenue share, a transfer queued or ended; and every import from tools/ of something that is
// not a tool (a helper that posts, called from outside a tool's run). It prints nothing and exits 0
// when there is none. Run: npm run check:money-path (or `node scripts/check-money-path.mjs <dir>`).

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = process.argv[2] ?? join(fileURLToPath(import.meta.url), '..', '..');
const SCANNED = ['src', 'bin', 'scripts'].filter((top) => existsSync(join(root, top)));

/**
 * The money-writing primitives, by file: the functions whose bodies may write (their callers are
 * what this checks). Everything else in these files is checked like any other code.
 */
const PRIMITIVES = new Map([
  ['src/ledger/ledger.ts', ['postLedger', 'ensureLedgerAccounts']],
  ['src/db/repositories/payments.ts', ['transitionPayment', 'insertPayment', 'insertPaymentWithSettings']],
]);

/** Modules under tools/ that code outside tools/ may import anything from: no money helpers. */
const SHARED_FROM_TOOLS = new Set(['tools/registry.ts', 'tools/schemas.ts', 'tools/payment-output.ts']);

const MONEY_TABLES = 'payments|payouts|refunds|revenue_shares|ledger_postings|ledger_entries|ledger_accounts';
/** A table named in kysely: 'payments', "payments", 'public.payments', 'payments as p'. */
const table = (names) => `\\(\\s*['"](?:public\\.)?(?:${names})(?:\\s+as\\s+\\w+)?['"]`;

const RULES = [
  { what: 'ledger posting', test: (s) => /\bpostLedger\s*\(/.test(s) },
  { what: 'payment status change', test: (s) => /\btransitionPayment\s*\(/.test(s) },
  {
    what: 'write to a money table',
    test: (s) => new RegExp(`\\.(updateTable|insertInto|deleteFrom|mergeInto)${table(MONEY_TABLES)}`).test(s),
  },
  {
    what: 'transfer queued or removed',
    test: (s) => new RegExp(`\\.(insertInto|deleteFrom|mergeInto)${table('transfers')}`).test(s),
  },
  {
    // A transfer's batching states (batched, sent, queued again) are the worker's; confirmed and
    // failed move its money. A status that is not a literal is not known to be neither.
    what: 'transfer confirmed or failed',
    test: (s) =>
      new RegExp(`\\.updateTable${table('transfers')}`).test(s) &&
      (/status:\s*'(confirmed|failed)'/.test(s) ||
        (/\.set\(/.test(s) && !/status:\s*'/.test(s) && /\bstatus\b/.test(s))),
  },
  {
    what: 'write to a money table in SQL',
    test: (s) =>
      sqlTemplates(s).some((text) =>
        new RegExp(
          `\\b(update|insert\\s+into|delete\\s+from|merge\\s+into)\\s+(?:"?public"?\\.)?"?(${MONEY_TABLES})\\b`,
          'i',
        ).test(text),
      ),
  },
];

/** The text of every sql`…` template in a statement (log messages and other strings are not SQL). */
function sqlTemplates(statement) {
  return [...statement.matchAll(/\bsql(?:<[^`]*?>)?`([^`]*)`/g)].map((m) => m[1]);
}

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* files(path);
    else if (/\.(ts|mjs|js)$/.test(name) && !/\.test\.ts$/.test(name)) yield path;
  }
}

/** Lines inside the bodies of the named functions (a body ends at the first `}` in column 0). */
function primitiveLines(lines, names) {
  const inside = new Set();
  for (let i = 0; i < lines.length; i++) {
    const m = /^export (?:async )?function (\w+)/.exec(lines[i]);
    if (!m || !names.includes(m[1])) continue;
    for (let j = i; j < lines.length; j++) {
      inside.add(j);
      if (j > i && lines[j].startsWith('}')) break;
    }
  }
  return inside;
}

/** Statements, roughly: a kysely chain or sql template runs to its `.execute…(` or `;`; else one line. */
function statements(text, skip) {
  const out = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (skip.has(i) || /^\s*(\/\/|\*|\/\*)/.test(lines[i])) continue;
    let statement = lines[i];
    const start = i;
    if (/\.(updateTable|insertInto|deleteFrom|mergeInto)\(/.test(statement) || /\bsql(<[^`]*>)?`/.test(statement)) {
      while (i + 1 < lines.length && !/\.execute\w*\(|;\s*$/.test(lines[i])) statement += `\n${lines[++i]}`;
    }
    out.push({ line: start + 1, text: statement });
  }
  return out;
}

/** Names a module under tools/ defines as tools (`export const x = defineTool(`). */
function toolsDefinedIn(path) {
  if (!existsSync(path)) return new Set();
  return new Set([...readFileSync(path, 'utf8').matchAll(/export const (\w+) = defineTool\(/g)].map((m) => m[1]));
}

/** Imports from tools/ of anything but tools and types (outside SHARED_FROM_TOOLS). */
function helperImports(path, text) {
  const found = [];
  for (const m of text.matchAll(/^import\s+(type\s+)?\{([^}]*)\}\s+from\s+'([^']+)'/gm)) {
    if (m[1]) continue;
    const target = resolve(dirname(path), m[3]);
    const rel = relative(root, target).split(sep).join('/');
    if (!rel.startsWith('tools/') || SHARED_FROM_TOOLS.has(rel)) continue;
    const tools = toolsDefinedIn(target);
    const values = m[2]
      .split(',')
      .map((n) => n.trim())
      .filter((n) => n && !n.startsWith('type '))
      .map((n) => n.split(/\s+as\s+/)[0]);
    const line = text.slice(0, m.index).split('\n').length;
    for (const name of values) {
      if (!tools.has(name) && !/^[A-Z][A-Z0-9_]+$/.test(name)) found.push({ line, name, from: rel });
    }
  }
  return found;
}

const found = [];
for (const top of SCANNED) {
  for (const path of files(join(root, top))) {
    const rel = relative(root, path).split(sep).join('/');
    if (rel === 'scripts/check-money-path.mjs') continue;
    const text = readFileSync(path, 'utf8');
    const skip = primitiveLines(text.split('\n'), PRIMITIVES.get(rel) ?? []);
    for (const { line, text: statement } of statements(text, skip)) {
      for (const rule of RULES) if (rule.test(statement)) found.push(`${rel}:${line}: ${rule.what}`);
    }
    for (const { line, name, from } of helperImports(path, text)) {
      found.push(`${rel}:${line}: imports ${name} from ${from}, which is not a tool`);
    }
  }
}
if (found.length > 0) {
  console.log(found.join('\n'));
  console.log(`\n${found.length} money write(s) outside tools/: make each one a tool's (docs/architecture.md).`);
  process.exit(1);
}
