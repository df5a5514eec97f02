import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Kysely } from 'kysely';
import type { Config } from '../config/config.ts';
import type { Clock } from '../core/clock.ts';
import type { Logger } from '../core/logger.ts';
import type { Database } from '../db/database.ts';
import type { Notifications } from '../db/notifications.ts';
import type { ToolEnvironment } from '../core/tool.ts';

/** Tunables of the settlement worker. Batch size and window come from config; the rest are defaults. */
export interface SettlementOptions {
  /** Most recipients (netted lines) in one batch call (SETTLEMENT_BATCH_MAX): gas grows with lines. */
  batchMax: number;
  /**
   * Most transfers in one batch: bounds the transaction that confirms it (one payment update and
   * event each). A window of more transfers than this goes out in several batches.
   */
  batchMaxTransfers: number;
  /** An instant partial batch goes out once no transfer has arrived for this long (SETTLEMENT_BATCH_WINDOW_MS)… */
  batchWindowMs: number;
  /** …or once its oldest transfer has waited this long (SETTLEMENT_BATCH_MAX_WAIT_MS). */
  batchMaxWaitMs: number;
  /** Sleep between idle loop turns; a busy loop turns again at once. */
  pollIntervalMs: number;
  /** The relayer lease lasts this long unless renewed (every loop turn renews it). */
  leaseTtlMs: number;
  /** Re-send a stored, unmined transaction after this long (same bytes; harmless if the node has it). */
  rebroadcastAfterMs: number;
  /** Replace an unmined transaction with a higher-fee one (same nonce, same calldata) after this long. */
  feeBumpAfterMs: number;
  /** Fee bumps stop at this multiple of the first transaction's maxFeePerGas. */
  maxFeeMultiplier: bigint;
  /** Paid payments taken per transaction. */
  intakeChunk: number;
  /** From this many failed attempts on, a transfer goes out in a batch of its own. */
  isolateAfterAttempts: number;
  /** After this many failed attempts a transfer fails for good and its money returns. */
  maxTransferAttempts: number;
  /** Upper bound on batches planned or sent per loop turn (keeps a turn short). */
  maxBatchesPerTurn: number;
  /** A batch sent longer ago than this and still unconfirmed raises the stuck alarm (error log + metric). */
  stuckAfterMs: number;
  /**
   * A sent batch whose nonce is already used with no successful receipt of its own waits for the
   * finality depth before it is declared failed: it raises the stuck alarm only this long after that
   * was first seen.
   */
  stuckAwaitingFinalityAfterMs: number;
  /** How often the stuck alarm looks (a database read, independent of the node). */
  stuckCheckIntervalMs: number;
  /**
   * A nonce missing on the chain that this relayer never handed out (another tool used the key) is
   * refilled only after it has been missing this long (it may be an operator's own transaction).
   */
  foreignNonceGapAfterMs: number;
  /** The node's chain identity is asked on every new head, and at least this often. */
  identityCheckIntervalMs: number;
}

export function defaultSettlementOptions(config: Config): SettlementOptions {
  return {
    batchMax: config.settlement.batchMax,
    batchMaxTransfers: 2000,
    batchWindowMs: config.settlement.batchWindowMs,
    batchMaxWaitMs: config.settlement.batchMaxWaitMs,
    pollIntervalMs: 50,
    leaseTtlMs: 10_000,
    rebroadcastAfterMs: 10_000,
    feeBumpAfterMs: 60_000,
    maxFeeMultiplier: 10n,
    intakeChunk: 100,
    isolateAfterAttempts: 2,
    maxTransferAttempts: 4,
    maxBatchesPerTurn: 20,
    stuckAfterMs: 300_000,
    stuckAwaitingFinalityAfterMs: 3_600_000,
    stuckCheckIntervalMs: 15_000,
    identityCheckIntervalMs: 10_000,
    foreignNonceGapAfterMs: 600_000,
  };
}

/**
 * What the settlement worker is given, and nothing more: what its system tools run with (every
 * money step is a run of one: tools/system/), and the notifications that wake it when a payment is
 * paid or a transfer queued. Not the runtime: it never reaches the rate limiter or the secret box.
 * A `Runtime` is one, so the composition roots pass theirs.
 */
export interface SettlementDeps extends ToolEnvironment {
  notifications: Notifications;
}

export interface SettlementContext {
  /** What the system tools run with (each batch outcome is a run of one: tools/system/). */
  toolEnvironment: ToolEnvironment;
  db: Kysely<Database>;
  config: Config;
  logger: Logger;
  clock: Clock;
  options: SettlementOptions;
  /** This worker's lease holder id: `host:pid:random`. */
  holder: string;
  /** Hashes this process has broadcast: after a restart every stored, unmined transaction is sent again. */
  broadcastHere: Set<string>;
}

export function newHolderId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

/**
 * True when `holder` names a process on this host that no longer exists (killed, crashed): its
 * lease can be taken at once instead of waiting for it to expire. Anything uncertain is "alive".
 */
export function isDeadHolderOnThisHost(holder: string): boolean {
  const parts = holder.split(':');
  if (parts.length !== 3 || parts[0] !== hostname()) return false;
  const pid = Number(parts[1]);
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
