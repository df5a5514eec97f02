// The one money path (docs/architecture.md §5): `npm run check:money-path` finds no ledger posting or
// money status change outside tools/ in this repository, and does find each kind when one is there.

import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const SCRIPT = join(import.meta.dirname, '..', 'scripts', 'check-money-path.mjs');

async function check(root?: string): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run(process.execPath, root ? [SCRIPT, root] : [SCRIPT]);
    return { code: 0, out: stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, out: failed.stdout };
  }
}

const trees: string[] = [];
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'money-path-'));
  trees.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}
afterAll(() => {
  for (const root of trees) rmSync(root, { recursive: true, force: true });
});

describe('check:money-path', () => {
  it('finds no money moved outside tools/ in this repository', async () => {
    expect(await check()).toEqual({ code: 0, out: '' });
  });

  it('names every kind of money write outside tools/, by file and line, and fails', async () => {
    const root = tree({
      'src/worker.ts': [
        '// postLedger(trx, x) in a comment is not a call',
        'await postLedger(trx, posting);',
        "await transitionPayment(trx, id, 'paid', 'settled');",
        "await db.updateTable('payouts').set({ status: 'settled' }).execute();",
        "await db.insertInto('transfers').values(row).execute();",
        "await db\n  .updateTable('transfers')\n  .set({ status: 'confirmed' })\n  .execute();",
        "await db.updateTable('transfers').set({ status: 'batched' }).execute();",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the fixture is source code with a template.
        "await sql`update payments set status = 'paid' where id = ${id}`.execute(db);",
        "await db.updateTable('payments as p').set({ status: 'paid' }).execute();",
        'await db.updateTable("refunds").set({ status: \'failed\' }).execute();',
        "await db.mergeInto('payouts').using('x', 'a', 'b').execute();",
        "await db.deleteFrom('transfers').execute();",
        "await db.updateTable('transfers').set({ status: outcome }).execute();",
        'await sql`UPDATE "public"."ledger_accounts" SET balance_minor = 0`.execute(db);',
        "logger.warn('could not update payouts for now');",
        "import { enqueueTransfer, payoutTool } from '../tools/queue.ts';",
        "import { type Helper } from '../tools/queue.ts';",
      ].join('\n'),
      'tools/queue.ts': 'export const payoutTool = defineTool({});\nexport async function enqueueTransfer() {}\n',
      'tools/system/settle.ts': 'await postLedger(trx, posting);\n',
      'src/ledger/ledger.ts': [
        'export async function postLedger(db, postings) {',
        "  await db.insertInto('ledger_entries').values(rows).execute();",
        '}',
        'export async function sweep(db) {',
        "  await db.updateTable('ledger_accounts').set({ balance_minor: 0n }).execute();",
        '}',
      ].join('\n'),
    });
    const { code, out } = await check(root);
    expect(code).toBe(1);
    expect(out.trim().split('\n').slice(0, -2).sort()).toEqual(
      [
        'src/ledger/ledger.ts:5: write to a money table',
        'src/worker.ts:2: ledger posting',
        'src/worker.ts:3: payment status change',
        'src/worker.ts:4: write to a money table',
        'src/worker.ts:5: transfer queued or removed',
        'src/worker.ts:7: transfer confirmed or failed',
        'src/worker.ts:11: write to a money table in SQL',
        'src/worker.ts:12: write to a money table',
        'src/worker.ts:13: write to a money table',
        'src/worker.ts:14: write to a money table',
        'src/worker.ts:15: transfer queued or removed',
        'src/worker.ts:16: transfer confirmed or failed',
        'src/worker.ts:17: write to a money table in SQL',
        'src/worker.ts:19: imports enqueueTransfer from tools/queue.ts, which is not a tool',
      ].sort(),
    );
  });
});
