import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from '../core/logger.ts';
import { claimScheduledRun, completeRun, failRun, findRun, insertRun } from '../db/repositories/reconciliation-runs.ts';
import type { ReconciliationRunRow, ReconciliationTrigger } from '../db/tables/reconciliation.ts';
import { newId } from '../domain/ids.ts';
import type { ReconciliationServices } from './services.ts';
import { type DayWindow, dayWindow } from './day.ts';
import type { LineKind } from './lines.ts';
import { type ReconciliationReport, reconcileDay } from './reconcile.ts';

/**
 * Runs of the reconciliation, kept as history (reconciliation_runs, and the lines each found):
 * the daily scheduled run, coordinated through the database so that several workers run each day
 * once, and the runs the operator asks for. Every stored run raises the alert when it found any.
 */

/** A run holds its day this long; a holder that died is replaced once it passes. */
const RUN_LEASE_MS = 15 * 60_000;
/** A failed scheduled run is tried again after this long (a provider or the chain may be back). */
const RETRY_AFTER_MS = 10 * 60_000;

/** A run the operator asks for (CLI, operator API): always runs, and is kept beside the scheduled one. */
export async function runReconciliation(
  services: ReconciliationServices,
  request: { day: string; trigger: Exclude<ReconciliationTrigger, 'schedule'> },
): Promise<ReconciliationRunRow> {
  const window = dayWindow(request.day);
  const now = services.clock.now();
  const run = { id: newId('rec'), holder: holderId() };
  await insertRun(services.db, {
    ...run,
    day: window.day,
    trigger: request.trigger,
    now,
    leaseUntil: new Date(now.getTime() + RUN_LEASE_MS),
  });
  await execute(services, window, run);
  return (await findRun(services.db, run.id))!;
}

/**
 * The day's scheduled run, if this process gets it (another worker may hold it, or it is done):
 * coordinated through the database, so several workers run it once. Undefined when not run here.
 */
export async function runScheduledReconciliation(
  services: ReconciliationServices,
  day: string,
): Promise<ReconciliationRunRow | undefined> {
  const window = dayWindow(day);
  const now = services.clock.now();
  const holder = holderId();
  const id = await claimScheduledRun(services.db, {
    id: newId('rec'),
    day: window.day,
    holder,
    now,
    leaseUntil: new Date(now.getTime() + RUN_LEASE_MS),
  });
  if (!id) return undefined;
  await execute(services, window, { id, holder });
  return findRun(services.db, id);
}

/** Runs a claimed run to its end: its result stored, or its failure (and the error rethrown). */
async function execute(
  services: ReconciliationServices,
  window: DayWindow,
  run: { id: string; holder: string },
): Promise<void> {
  let report: ReconciliationReport;
  try {
    report = await reconcileDay(services, window);
  } catch (error) {
    const now = services.clock.now();
    await failRun(services.db, {
      ...run,
      finishedAt: now,
      error: (error as Error).message.slice(0, 2000),
      retryAt: new Date(now.getTime() + RETRY_AFTER_MS),
    });
    throw error;
  }
  const { treasury } = report.summary;
  const stored = await services.db.transaction().execute((trx) =>
    completeRun(trx, {
      ...run,
      finishedAt: services.clock.now(),
      summary: report.summary,
      lines: report.lines,
      coverRatio: treasury?.cover_ratio ?? null,
      shortfallMinor: treasury ? BigInt(treasury.shortfall_minor) : null,
    }),
  );
  if (stored) raiseAlerts(services.logger, run.id, report);
}

/**
 * The alert (docs/operations.md, "Reconciliation"): an error line naming what is wrong, beside
 * the metrics a rule fires on. A treasury shortfall has a line of its own: it is the operator's
 * money, and every merchant's settlement waits on it.
 */
function raiseAlerts(logger: Pick<Logger, 'error'>, runId: string, report: ReconciliationReport): void {
  const { day, treasury } = report.summary;
  if (treasury && BigInt(treasury.shortfall_minor) > 0n) {
    logger.error(
      {
        day,
        run: runId,
        chainKey: treasury.chain_key,
        heldMinor: treasury.held_minor,
        owedMinor: treasury.owed_minor,
        shortfallMinor: treasury.shortfall_minor,
      },
      'reconciliation: the treasury holds less than it owes merchants; top it up (docs/reconciliation.md, "treasury_shortfall")',
    );
  }
  if (report.lines.length === 0) return;
  const byKind: Partial<Record<LineKind, number>> = {};
  for (const l of report.lines) byKind[l.kind] = (byKind[l.kind] ?? 0) + 1;
  logger.error(
    { day, run: runId, differences: report.lines.length, byKind },
    `reconciliation of ${day} found ${report.lines.length} difference(s): ${Object.entries(byKind)
      .map(([kind, n]) => `${n} ${kind}`)
      .join(', ')} (plainpay reconcile --date ${day}; docs/reconciliation.md)`,
  );
}

/** Who runs a run: this process, and this call (one process may run two days at once). */
function holderId(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}
