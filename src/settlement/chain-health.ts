// Chain identity: which chain settlement signs for, and what a worker does when its node serves
// another one. The node behind CHAIN_RPC_URL can be replaced (restarted with a new genesis,
// re-pointed at another network); a worker that kept signing would hand out nonces the new chain
// has never seen, or, worse, re-broadcast transactions of the old chain on a chain where they can
// land again. So the expected chain is one database row (settlement_chain), recorded on first use;
// a worker that sees its node serve another chain records that, and refuses to sign or broadcast
// (error log, metric, readiness) until an operator runs `plainpay chain adopt` or the node serves
// the expected chain again. The in-process devnet is a new chain every start and is never pinned.

import type { Kysely } from 'kysely';
import type { Logger } from '../core/logger.ts';
import type { Database } from '../db/database.ts';
import { recordChainIdentityMismatch, recordStuckBatches } from '../metrics/metrics.ts';
import { LOCAL_CHAIN_IDS } from '../chain/test-networks.ts';
import type { ToolEnvironment } from '../core/tool.ts';
import { operatorActor, runSystemToolIn } from '../pipeline/system-runs.ts';
import { finalizeSettlementBatches } from '../../tools/system/confirmed-settlement-batches.ts';
import { replanSettlementBatches } from '../../tools/system/replan-settlement-batches.ts';
import type { ChainIdentity } from './chain-session.ts';
import { speaksForSettlement } from '../db/repositories/relayer-leases.ts';
import { countSentBatchesOn, lockSentBatchesOn, stuckBatches } from '../db/repositories/settlement-batches.ts';
import {
  clearObservedChain,
  ensureChain,
  findSettlementChain,
  isChainEphemeral,
  newestOpenRemoteChain,
  recordAdoptedChain,
  recordFirstSettlementChain,
  recordObservedChain,
} from '../db/repositories/settlement-chain.ts';

export type ChainIdentityVerdict =
  | { ok: true }
  | { ok: false; expected: { key: string; chainId: number }; observed: ChainIdentity; reason: string };

/**
 * Compares what the node serves now with the expected chain, recording the first chain ever seen
 * as the expected one. On a mismatch the observation is stored (readiness reads it) and the metric
 * is set; when the node serves the expected chain again, both clear.
 *
 * On first use with no expected chain recorded yet (a database from before this check), batches
 * still open on another remote chain make that chain the expected one: their transactions belong
 * to it, and a node serving something else is exactly the case to refuse.
 */
export async function verifyChainIdentity(
  db: Kysely<Database>,
  observed: ChainIdentity,
  signerChainId: number,
  logger: Logger,
): Promise<ChainIdentityVerdict> {
  let expected = await findSettlementChain(db);
  if (!expected) {
    const first = (await newestOpenRemoteChain(db)) ?? {
      chain_key: observed.key,
      chain_id: observed.chainId,
      genesis_hash: observed.genesisHash,
    };
    await ensureChain(db, first);
    await recordFirstSettlementChain(db, first);
    expected = await findSettlementChain(db);
    if (!expected) throw new Error('no settlement chain after recording the first one');
    logger.info({ chain: expected.chain_key }, 'settlement signs for this chain (recorded on first use)');
  }

  if (expected.chain_key === observed.key && observed.chainId === signerChainId) {
    if (expected.observed_chain_key !== null) {
      await clearObservedChain(db);
      logger.warn({ chain: observed.key }, 'the node serves the expected chain again; signing resumes');
    }
    recordChainIdentityMismatch(false);
    return { ok: true };
  }

  if (expected.chain_key === observed.key) {
    // The node serves the expected chain; only this worker's connection was made for another chain
    // id (the node behind the URL changed chain and came back, or the configuration names another
    // chain). Nothing for an operator to adopt: the database keeps no observation, this worker
    // refuses until it is restarted (or its configuration fixed).
    recordChainIdentityMismatch(true);
    return {
      ok: false,
      expected: { key: expected.chain_key, chainId: expected.chain_id },
      observed,
      reason: `the node serves chain id ${observed.chainId}, but this worker connected for chain id ${signerChainId}: restart the worker (and check CHAIN_RPC_URL / the chain configuration); 'plainpay chain adopt' does not apply`,
    };
  }
  const reason = `the node serves chain ${observed.key}, not ${expected.chain_key} that settlement signs for: check CHAIN_RPC_URL, or run 'plainpay chain adopt ${observed.key}' (docs/operations.md)`;
  if (expected.observed_chain_key !== observed.key) {
    await recordObservedChain(db, {
      chain_key: observed.key,
      chain_id: observed.chainId,
      genesis_hash: observed.genesisHash,
    });
  }
  recordChainIdentityMismatch(true);
  return { ok: false, expected: { key: expected.chain_key, chainId: expected.chain_id }, observed, reason };
}

export interface ChainReadiness {
  ready: boolean;
  reason?: string;
}

/**
 * For /readyz: not ready while a settlement worker found its node serving another chain than the
 * one settlement signs for. One indexed read of one row, no RPC (the workers do the checking).
 */
export async function chainReadiness({ db }: { db: Kysely<Database> }): Promise<ChainReadiness> {
  const row = await findSettlementChain(db);
  if (!row || row.observed_chain_key === null) return { ready: true };
  return {
    ready: false,
    reason: `chain identity: the node serves chain ${row.observed_chain_key}, settlement signs for ${row.chain_key}; settlement is stopped until 'plainpay chain adopt' (docs/operations.md)`,
  };
}

export interface ChainAdoption {
  /** The chain settlement signed for until now. */
  previous: string;
  adopted: string;
  /** Batches sent on the previous chain and not confirmed there. */
  strandedBatches: number;
  /** With oldChainGone: how many of them go back to planned, to be signed again on the new chain. */
  replannedBatches: number;
}

export class ChainAdoptionError extends Error {
  override name = 'ChainAdoptionError';
}

/**
 * `plainpay chain adopt`: makes the chain a worker observed the one settlement signs for. The key
 * must be the observed one exactly (the operator names what they accept). Batches sent on the
 * previous chain stay there, untouched: their signed transactions may still land on it if it comes
 * back, and re-sending them on the new chain could pay twice. Only with `oldChainGone` (the
 * operator asserts the old chain and every transaction on it are gone for good, e.g. a reset test
 * node) do they go back to planned, with the same batch id, to be signed on the new chain; that is
 * refused unless the old chain is a local development node (LOCAL_CHAIN_IDS) or was recorded as
 * ephemeral. Confirmed batches of the old chain stay confirmed and are no longer watched for reorgs.
 * Both batch steps are system tools run under the operator's actor, in the adoption's transaction:
 * the batches move with the chain settlement signs for, or not at all.
 */
export async function adoptObservedChain(
  env: ToolEnvironment,
  chainKey: string,
  options: { oldChainGone: boolean },
): Promise<ChainAdoption> {
  return env.db.transaction().execute(async (trx) => {
    const row = await findSettlementChain(trx, { forUpdate: true });
    if (!row) throw new ChainAdoptionError('no chain is recorded yet: a worker records the first chain it signs for');
    if (row.observed_chain_key === null || row.observed_chain_id === null || row.observed_genesis_hash === null) {
      throw new ChainAdoptionError(
        `no other chain was observed: settlement signs for ${row.chain_key} and its node serves it`,
      );
    }
    if (row.observed_chain_key === row.chain_key) {
      // Recorded by an older worker for a chain-id mismatch on the expected chain itself: that is
      // a worker connected for another chain id, fixed by a restart or its configuration.
      throw new ChainAdoptionError(
        `the node serves ${row.chain_key}, the chain settlement already signs for: a worker whose chain id differs needs a restart or a configuration fix (CHAIN_RPC_URL), not adopt`,
      );
    }
    if (row.observed_chain_key !== chainKey) {
      throw new ChainAdoptionError(`the observed chain is ${row.observed_chain_key}, not ${chainKey}`);
    }
    if (options.oldChainGone) {
      // Refuse when in doubt: declaring a live chain gone re-signs its batches elsewhere while their
      // transactions can still land there, paying twice. Only a local development node (which can
      // be reset for good) or a chain recorded as ephemeral qualifies; every other chain, known or
      // not, may come back.
      if (!LOCAL_CHAIN_IDS.has(row.chain_id) && (await isChainEphemeral(trx, row.chain_key)) !== true) {
        throw new ChainAdoptionError(
          `chain id ${row.chain_id} is not a local development node (${[...LOCAL_CHAIN_IDS].join(', ')}): it may still be live, and its batches may still land there; adopt without --old-chain-gone`,
        );
      }
    }
    const stranded = await lockSentBatchesOn(trx, row.chain_key);
    let replanned = 0;
    if (options.oldChainGone && stranded.length > 0) {
      const run = await runSystemToolIn(
        trx,
        env,
        replanSettlementBatches,
        {
          batch_ids: stranded.map((b) => b.id),
          chain_key: row.chain_key,
          reason: 'the chain this was signed for was declared gone (chain adopt --old-chain-gone)',
        },
        operatorActor(),
      );
      replanned = run.replanned.length;
    }
    // Settlement no longer follows the old chain: its confirmed batches stay confirmed, and the reorg
    // watch stops looking at them (it only watches the chain settlement signs for).
    await runSystemToolIn(trx, env, finalizeSettlementBatches, { chain_key: row.chain_key }, operatorActor());
    const adopted = {
      chain_key: row.observed_chain_key,
      chain_id: row.observed_chain_id,
      genesis_hash: row.observed_genesis_hash,
    };
    await ensureChain(trx, adopted);
    await recordAdoptedChain(trx, adopted);
    return {
      previous: row.chain_key,
      adopted: row.observed_chain_key,
      strandedBatches: stranded.length,
      replannedBatches: replanned,
    };
  });
}

/** What `plainpay chain adopt` without a key shows. */
export async function describeChainIdentity(db: Kysely<Database>): Promise<{
  expected: string | null;
  adoptedBy: string | null;
  observed: string | null;
  observedAt: Date | null;
  openBatchesOnExpected: number;
}> {
  const row = await findSettlementChain(db);
  return {
    expected: row?.chain_key ?? null,
    adoptedBy: row?.adopted_by ?? null,
    observed: row?.observed_chain_key ?? null,
    observedAt: row?.observed_at ?? null,
    openBatchesOnExpected: row ? await countSentBatchesOn(db, row.chain_key) : 0,
  };
}

/**
 * The stuck-batch alarm: batches sent (or back in flight after a reorg) longer ago than
 * `stuckAfterMs` and still unconfirmed. A batch whose nonce is already used without a successful
 * receipt of its own (nonce_used_at: its transaction reverted, or another took the nonce) only waits
 * for the finality depth before it is declared failed, which takes longer than stuckAfterMs on most
 * mainnets; it counts as stuck once it has waited `stuckAwaitingFinalityAfterMs` since that was seen.
 *
 * Sets the gauge (every process, from the database) and logs each newly stuck batch at error level
 * (`alarmed` remembers which were reported, across calls): only in the worker holding a live relayer
 * lease, or in every worker while none does (the node is down), so one line per batch, not one per
 * process. Reads the database only, so it runs on its own timer and still fires while the node does
 * not answer.
 */
export async function checkStuckBatches(
  db: Kysely<Database>,
  logger: Logger,
  holder: string,
  options: { stuckAfterMs: number; stuckAwaitingFinalityAfterMs: number },
  alarmed: Set<string>,
): Promise<number> {
  const { stuckAfterMs } = options;
  const stuck = await stuckBatches(db, options);
  recordStuckBatches(stuck.length);
  const now = new Set(stuck.map((b) => b.id));
  for (const id of alarmed) if (!now.has(id)) alarmed.delete(id);
  const fresh = stuck.filter((b) => !alarmed.has(b.id));
  if (fresh.length === 0) return stuck.length;
  if (!(await speaksForSettlement(db, holder))) return stuck.length;
  for (const b of fresh) alarmed.add(b.id);
  logger.error(
    {
      batches: fresh.map((b) => b.id),
      chains: [...new Set(fresh.map((b) => b.chain_key))],
      oldestSentAt: fresh[0]?.sent_at,
      awaitingFinality: fresh.filter((b) => b.nonce_used_at !== null).map((b) => b.id),
      stuckAfterMs,
      totalStuck: stuck.length,
    },
    'settlement batches unconfirmed past the stuck threshold (docs/operations.md, "Stuck settlement batches")',
  );
  return stuck.length;
}
