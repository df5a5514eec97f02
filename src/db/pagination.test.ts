// readPage and fromCursor: the one way every list reads a page (src/db/pagination.ts). Driven
// against the migrated test database with agent runs, whose list index is (account_id, livemode,
// created_at desc, id desc) like every listed table's.

import { beforeAll, describe, expect, it } from 'vitest';
import { testAccount, testRuntime } from '../../test/support/harness.ts';
import type { Db, ModeScope } from './database.ts';
import { FIRST_PAGE, fromCursor, type Keyset, keysetIn, type PageRequest, readPage } from './pagination.ts';

let db: Db;
let owner: ModeScope;
let other: ModeScope;

/** Seven runs a minute apart (run_p1 oldest, run_p7 newest), and two that share run_p7's time. */
const BASE = Date.parse('2026-03-01T12:00:00Z');
const RUNS: Array<[id: string, minute: number]> = [
  ['run_p1', 1],
  ['run_p2', 2],
  ['run_p3', 3],
  ['run_p4', 4],
  ['run_p5', 5],
  ['run_p6', 6],
  ['run_p7a', 7],
  ['run_p7b', 7],
  ['run_p7c', 7],
];
/** List order: newest first, and among runs of the same instant the greater id first. */
const LISTED = ['run_p7c', 'run_p7b', 'run_p7a', 'run_p6', 'run_p5', 'run_p4', 'run_p3', 'run_p2', 'run_p1'];

async function insertRun(scope: ModeScope, id: string, minute: number): Promise<void> {
  await db
    .insertInto('agent_runs')
    .values({
      id,
      account_id: scope.accountId,
      livemode: scope.livemode,
      channel: 'agent',
      instruction: 'Settle',
      model: 'offline',
      dry_run: false,
      status: 'completed',
      reply: 'Done.',
      created_at: new Date(BASE + minute * 60_000),
    })
    .execute();
}

beforeAll(async () => {
  const runtime = await testRuntime();
  db = runtime.db;
  owner = { accountId: (await testAccount(runtime)).accountId, livemode: false };
  other = { accountId: (await testAccount(runtime)).accountId, livemode: false };
  for (const [id, minute] of RUNS) await insertRun(owner, id, minute);
  // Rows the owner's pages must never show: another account's, and the owner's other mode's.
  await insertRun(other, 'run_other', 8);
  await insertRun({ ...owner, livemode: true }, 'run_live', 8);
});

function runsOf(scope: ModeScope) {
  return db
    .selectFrom('agent_runs')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode);
}

async function page(request: PageRequest): Promise<{ ids: string[]; has_more: boolean }> {
  const keyset = await keysetIn(db, 'agent_runs', owner, request, 'run');
  const read = await readPage(runsOf(owner), keyset, request.limit);
  return { ids: read.data.map((row) => row.id), has_more: read.has_more };
}

describe('readPage', () => {
  it('reads the first page newest first, ties broken by id, and says more follow', async () => {
    expect(await page({ limit: 4 })).toEqual({ ids: LISTED.slice(0, 4), has_more: true });
  });

  it('says no more follow when the page holds the last row', async () => {
    expect(await page({ limit: LISTED.length })).toEqual({ ids: LISTED, has_more: false });
  });

  it('pages older with starting_after, through a tie, to the end', async () => {
    expect(await page({ limit: 2, starting_after: 'run_p7c' })).toEqual({
      ids: ['run_p7b', 'run_p7a'],
      has_more: true,
    });
    expect(await page({ limit: 3, starting_after: 'run_p4' })).toEqual({
      ids: ['run_p3', 'run_p2', 'run_p1'],
      has_more: false,
    });
  });

  it('pages newer with ending_before, still newest first, has_more when newer rows remain', async () => {
    // The two runs just newer than run_p4, not the two newest of all.
    expect(await page({ limit: 2, ending_before: 'run_p4' })).toEqual({
      ids: ['run_p6', 'run_p5'],
      has_more: true,
    });
    expect(await page({ limit: 5, ending_before: 'run_p6' })).toEqual({
      ids: ['run_p7c', 'run_p7b', 'run_p7a'],
      has_more: false,
    });
  });

  it("refuses a cursor that is another account's or another mode's as if it did not exist", async () => {
    for (const id of ['run_other', 'run_live', 'run_unknown']) {
      await expect(page({ limit: 2, starting_after: id })).rejects.toMatchObject({
        code: 'invalid_request',
        param: 'starting_after',
        message: `starting_after: no such run '${id}'.`,
      });
    }
  });

  it('keeps the filters of the query it is given', async () => {
    const narrowed = runsOf(owner).where('id', 'in', ['run_p1', 'run_p5', 'run_p7a']);
    const read = await readPage(narrowed, FIRST_PAGE, 2);
    expect(read.data.map((row) => row.id)).toEqual(['run_p7a', 'run_p5']);
    expect(read.has_more).toBe(true);
  });
});

describe('fromCursor', () => {
  // The list indexes are read in order only when the scan runs the way the cursor points:
  // descending for older rows, ascending for newer ones (then readPage turns the page around).
  const cursor = { createdAt: new Date(BASE), id: 'run_p1' };
  const compiled = (keyset: Keyset) => fromCursor(runsOf(owner), keyset, 11).compile();

  it('reads older rows descending, from below the cursor, with the limit asked', () => {
    const query = compiled({ cursor, direction: 'older' });
    expect(query.sql).toMatch(
      /\(created_at, id\) < \(\$\d+, \$\d+\) order by "created_at" desc, "id" desc limit \$\d+$/,
    );
    expect(query.parameters.slice(-3)).toEqual([cursor.createdAt, cursor.id, 11]);
  });

  it('reads newer rows ascending, from above the cursor', () => {
    expect(compiled({ cursor, direction: 'newer' }).sql).toMatch(
      /\(created_at, id\) > \(\$\d+, \$\d+\) order by "created_at" asc, "id" asc limit \$\d+$/,
    );
  });

  it('puts no bound on a first page', () => {
    expect(compiled(FIRST_PAGE).sql).toMatch(/and true order by "created_at" desc, "id" desc limit \$\d+$/);
  });
});
