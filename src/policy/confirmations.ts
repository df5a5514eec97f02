import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Config } from '../config/config.ts';
import { AppError } from '../core/errors.ts';
import { stringifyJson } from '../core/json-text.ts';
import type { Channel } from '../core/tool.ts';
import type { Database, Db } from '../db/database.ts';
import {
  insertConfirmation,
  markConfirmationExecuted,
  markLapsedConfirmationsExpired,
  setConfirmationResult,
} from '../db/repositories/confirmations.ts';
import { insertEvent } from '../db/repositories/events.ts';
import type { ConfirmationRow } from '../db/tables/money.ts';
import { newId } from '../domain/ids.ts';
import type { EventType } from '../webhooks/event-types.ts';
import type { PolicyDecision } from './engine.ts';

/** How long a held action waits for a human before it lapses. */
export const CONFIRMATION_TTL_MS = 15 * 60_000;
/** Confirmations expired per transaction by the expiry job. */
export const CONFIRMATION_EXPIRY_BATCH = 100;

export const confirmationOutput = z
  .object({
    id: z.string().describe('Confirmation id (conf_…).'),
    object: z.literal('confirmation'),
    status: z
      .enum(['pending', 'executed', 'rejected', 'expired'])
      .describe('pending until a human approves (→ executed) or rejects it, or it lapses (expired).'),
    tool: z.string().describe('The held tool call.'),
    channel: z.string(),
    summary: z.string().describe('What would happen, in one line.'),
    input: z.record(z.string(), z.unknown()).describe('The exact input that will run on approval.'),
    reasons: z
      .array(z.object({ rule: z.string(), outcome: z.string(), reason: z.string() }))
      .describe('Why the policy held it.'),
    approve_url: z.string().describe('Where a human with an approvals key approves it.'),
    requested_by_key: z.string().nullable(),
    decided_by_key: z.string().nullable(),
    expires_at: z.string(),
    created: z.string(),
    decided_at: z.string().nullable(),
    result: z.unknown().describe('The tool output once executed.'),
  })
  .describe('An action the policy held for human approval.');

export type ConfirmationView = z.output<typeof confirmationOutput>;

/** The short form a held tool call answers with (REST 202, MCP result, agent run). */
export interface ConfirmationRequired {
  status: 'confirmation_required';
  confirmation_id: string;
  summary: string;
  approve_url: string;
  expires_at: string;
  reasons: { rule: string; outcome: string; reason: string }[];
}

export function approveUrl(config: Config, id: string): string {
  return `${config.publicBaseUrl}/dashboard/confirmations/${id}`;
}

export function effectiveStatus(row: ConfirmationRow, now: Date): ConfirmationRow['status'] {
  return row.status === 'pending' && row.expires_at <= now ? 'expired' : row.status;
}

export function presentConfirmation(config: Config, row: ConfirmationRow, now: Date): ConfirmationView {
  const decision = row.decision as { reasons?: ConfirmationView['reasons'] };
  return {
    id: row.id,
    object: 'confirmation',
    status: effectiveStatus(row, now),
    tool: row.tool,
    channel: row.channel,
    summary: row.summary,
    input: row.input as Record<string, unknown>,
    reasons: decision.reasons ?? [],
    approve_url: approveUrl(config, row.id),
    requested_by_key: row.requested_by_key,
    decided_by_key: row.decided_by_key,
    expires_at: row.expires_at.toISOString(),
    created: row.created_at.toISOString(),
    decided_at: row.decided_at?.toISOString() ?? null,
    result: row.result ?? null,
  };
}

export function confirmationRequired(config: Config, row: ConfirmationRow): ConfirmationRequired {
  const decision = row.decision as { reasons?: ConfirmationRequired['reasons'] };
  return {
    status: 'confirmation_required',
    confirmation_id: row.id,
    summary: row.summary,
    approve_url: approveUrl(config, row.id),
    expires_at: row.expires_at.toISOString(),
    reasons: decision.reasons ?? [],
  };
}

/**
 * Writes the event of a confirmation's step, in the caller's transaction (the one that made the
 * step): its data is the confirmation as GET /v1/confirmations/:id presents it.
 */
export async function announceConfirmation(
  db: Db,
  config: Config,
  row: ConfirmationRow,
  type: Extract<EventType, `action.${string}`>,
  at: Date,
): Promise<void> {
  await insertEvent(db, {
    accountId: row.account_id,
    livemode: row.livemode,
    type,
    objectId: row.id,
    data: { object: presentConfirmation(config, row, at) },
    webhookUrl: null,
    createdAt: at,
  });
}

/** Stores a held action, bound to its canonical input by hash, and announces it. */
export async function createConfirmation(
  db: Db,
  config: Config,
  held: {
    accountId: string;
    livemode: boolean;
    tool: string;
    channel: Channel;
    input: unknown;
    inputHash: string;
    summary: string;
    decision: PolicyDecision;
    requestedByKey: string | null;
    runId: string | null;
    at: Date;
  },
): Promise<ConfirmationRow> {
  const row = await insertConfirmation(db, {
    id: newId('conf'),
    account_id: held.accountId,
    livemode: held.livemode,
    tool: held.tool,
    channel: held.channel,
    input: JSON.stringify(held.input),
    input_hash: held.inputHash,
    summary: held.summary,
    decision: JSON.stringify(held.decision),
    requested_by_key: held.requestedByKey,
    run_id: held.runId,
    status: 'pending',
    expires_at: new Date(held.at.getTime() + CONFIRMATION_TTL_MS),
    created_at: held.at,
  });
  await announceConfirmation(db, config, row, 'action.confirmation_required', held.at);
  return row;
}

/**
 * Uses up a held action a human approved, as it runs: single use, and only while it is still
 * pending and unexpired (a second approval, a rejection or the lapse that came first wins).
 */
export async function consumeConfirmation(
  db: Db,
  confirmation: { id: string; approverKeyId: string },
  scope: { accountId: string },
  now: Date,
): Promise<void> {
  const consumed = await markConfirmationExecuted(db, confirmation, scope, now);
  if (!consumed)
    throw new AppError(
      'conflict',
      `Confirmation ${confirmation.id} is no longer pending (already used, rejected or expired).`,
    );
}

/** What the approved action produced, kept on its confirmation, and action.approved announcing it. */
export async function recordConfirmationResult(
  db: Db,
  config: Config,
  id: string,
  result: unknown,
  now: Date,
): Promise<void> {
  const approved = await setConfirmationResult(db, id, stringifyJson(result));
  await announceConfirmation(db, config, approved, 'action.approved', now);
}

/**
 * Marks lapsed pending confirmations expired, each with its action.expired event, in one
 * transaction; returns how many. Reads already call such a row expired (effectiveStatus): this
 * makes it a recorded step that someone can be told about. SKIP LOCKED lets several workers share
 * the work, and an approval that consumes the row first (it requires expires_at > now) wins.
 */
export async function expireDueConfirmations(db: Kysely<Database>, config: Config, now: Date): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const expired = await markLapsedConfirmationsExpired(trx, now, CONFIRMATION_EXPIRY_BATCH);
    for (const row of expired) await announceConfirmation(trx, config, row, 'action.expired', now);
    return expired.length;
  });
}
