import type { z } from 'zod';
import { lockAccountActions } from '../audit/action-log.ts';
import { advanceHeldAction, recordAction } from '../audit/actions.ts';
import { findIdempotencyRecord, insertIdempotencyRecord } from '../db/repositories/idempotency.ts';
import type { Db } from '../db/database.ts';
import type { ActionDecision } from '../db/tables/money.ts';
import type { ApiKeyScope } from '../domain/api-key-secret.ts';
import type { RuleVerdict } from '../policy/action.ts';
import { type ConfirmationRequired, confirmationRequired, createConfirmation } from '../policy/confirmations.ts';
import { loadPolicyContext } from '../policy/context.ts';
import { evaluatePolicy, type PolicyDecision, summarizeDecision } from '../policy/engine.ts';
import { loadPolicy } from '../policy/store.ts';
import type { Runtime } from '../runtime.ts';
import { canonicalHash } from './canonical-json.ts';
import { AppError, type ErrorBody, toAppError } from './errors.ts';
import type { Actor, ToolContext, ToolDefinition } from './tool.ts';
import { parseInput } from './validation.ts';

export interface ExecuteOptions {
  runtime: Runtime;
  actor: Actor;
  /** Caller-chosen key: the same (account, mode, key) returns the first result. */
  idempotencyKey?: string | undefined;
  /** The agent run this call belongs to, for the action log. */
  runId?: string | null;
  /** Plan only: judge by policy and record the plan, change nothing (reads still run). */
  dryRun?: boolean;
  /** Executing a held action a human approved (see approveConfirmation). */
  confirmation?: { id: string; approverKeyId: string };
}

export type ToolResult<O> =
  | { kind: 'executed'; output: O; replayed: boolean; decision: ActionDecision; actionId: string | null }
  | { kind: 'confirmation_required'; confirmation: ConfirmationRequired; replayed: boolean; actionId: string | null }
  | { kind: 'planned'; decision: PolicyDecision; summary: string | null; actionId: string | null };

/** What an idempotency record stores: the first result, whatever it was. */
type StoredResult<O> =
  | { kind: 'executed'; output: O; decision: ActionDecision; actionId: string | null }
  | { kind: 'confirmation_required'; confirmation: ConfirmationRequired; actionId: string | null }
  | { kind: 'denied'; error: ErrorBody['error'] };

const NOT_CHECKED: PolicyDecision = { outcome: 'allow', reasons: [] };

/**
 * The one path every operation takes (DESIGN.md §4):
 * validate → scope → (precheck) → in one transaction: idempotency → policy → handler + ledger +
 * outbox + action log → typed result. Errors are AppErrors, mapped per transport in one place.
 *
 * Money tools are always policy-checked (except on the service's own `system` channel) and always
 * logged; on the agent and MCP channels every tool call is checked and logged.
 */
export async function executeTool<I extends z.ZodType, O extends z.ZodType>(
  tool: ToolDefinition<I, O>,
  rawInput: unknown,
  options: ExecuteOptions,
): Promise<ToolResult<z.output<O>>> {
  const { runtime, actor, idempotencyKey } = options;
  const logged = tool.effect === 'money' || actor.channel === 'agent' || actor.channel === 'mcp';
  const checked = logged && actor.channel !== 'system';
  let input: z.output<I>;
  try {
    input = parseInput(tool.input, rawInput);
    requireToolScope(actor, tool.scope);
    await tool.precheck?.(input, { runtime, actor, now: runtime.clock.now() });
  } catch (error) {
    // What an agent or MCP client tried and was refused is part of the record too.
    if (logged && !options.dryRun) {
      await recordFailure(
        runtime,
        {
          accountId: actor.accountId,
          livemode: actor.livemode,
          runId: options.runId ?? null,
          channel: actor.channel,
          keyId: actor.keyId,
          tool: tool.name,
          input: rawInput ?? null,
        },
        error,
      );
    }
    throw error;
  }

  if (!logged && tool.effect === 'read') {
    const output = await tool.handler(input, { runtime, db: runtime.db, actor, now: runtime.clock.now() });
    return { kind: 'executed', output, replayed: false, decision: 'not_checked', actionId: null };
  }

  const requestHash = canonicalHash({ tool: tool.name, input });
  const base = {
    accountId: actor.accountId,
    livemode: actor.livemode,
    runId: options.runId ?? null,
    channel: actor.channel,
    keyId: actor.keyId,
    tool: tool.name,
    input,
  };

  let stored: StoredResult<z.output<O>> | undefined;
  let replayed = false;
  let planned: ToolResult<z.output<O>> | undefined;
  try {
    await runtime.db.transaction().execute(async (trx) => {
      const now = runtime.clock.now();
      const ctx: ToolContext = { runtime, db: trx, actor, now };
      if (logged) await lockAccountActions(trx, actor.accountId);

      if (idempotencyKey !== undefined && !options.dryRun) {
        const claimed = await insertIdempotencyRecord(trx, { ...base, key: idempotencyKey, requestHash });
        if (!claimed) {
          stored = await replay<z.output<O>>(trx, actor, idempotencyKey, requestHash, tool.name);
          replayed = true;
          return;
        }
      }

      const subject = checked && tool.policy ? await tool.policy(input, ctx) : undefined;
      const decision = checked
        ? evaluatePolicy(
            (await loadPolicy(trx, actor)).policy,
            {
              tool: tool.name,
              effect: tool.effect,
              channel: actor.channel,
              amountSettlementMinor: subject?.amountSettlementMinor,
              recipients: subject?.recipients ?? [],
            },
            tool.effect === 'money'
              ? await loadPolicyContext(trx, actor, subject?.recipients ?? [], now)
              : { spentLast24hSettlementMinor: 0n, knownRecipients: new Set() },
            { satisfiedConfirmation: options.confirmation !== undefined },
          )
        : NOT_CHECKED;
      const decided: ActionDecision = checked ? decision.outcome : 'not_checked';
      const reasons: readonly RuleVerdict[] = decision.reasons;

      if (options.dryRun && tool.effect !== 'read') {
        const actionId = await recordAction(trx, { ...base, decision: decided, reasons, status: 'planned', at: now });
        planned = { kind: 'planned', decision, summary: subject?.summary ?? null, actionId };
        return;
      }

      if (decision.outcome === 'deny') {
        const error = new AppError(
          'policy_denied',
          `The account policy denies this action: ${summarizeDecision(decision)}.`,
        ).toBody().error;
        await recordAction(trx, { ...base, decision: decided, reasons, status: 'denied', error, at: now });
        stored = { kind: 'denied', error };
      } else if (decision.outcome === 'require_confirmation') {
        const confirmation = await createConfirmation(trx, {
          ...base,
          requestedByKey: actor.keyId,
          inputHash: canonicalHash(input),
          summary: subject?.summary ?? tool.title,
          decision,
          at: now,
        });
        const held = confirmationRequired(runtime.config, confirmation);
        const actionId = await recordAction(trx, {
          ...base,
          decision: decided,
          reasons,
          status: 'held',
          result: held,
          confirmationId: confirmation.id,
          at: now,
        });
        stored = { kind: 'confirmation_required', confirmation: held, actionId };
      } else {
        if (options.confirmation) await consumeConfirmation(trx, options.confirmation, actor, now);
        const output = await tool.handler(input, ctx);
        let actionId: string | null = null;
        if (tool.effect === 'money' && subject?.amountSettlementMinor !== undefined) {
          await trx
            .insertInto('policy_spend')
            .values({
              account_id: actor.accountId,
              livemode: actor.livemode,
              channel: actor.channel,
              tool: tool.name,
              object_id: objectIdOf(output) ?? '',
              amount_settlement_minor: subject.amountSettlementMinor,
              created_at: now,
            })
            .execute();
        }
        if (options.confirmation) {
          await advanceHeldAction(trx, {
            accountId: actor.accountId,
            livemode: actor.livemode,
            confirmationId: options.confirmation.id,
            status: 'executed',
            approvedByKey: options.confirmation.approverKeyId,
            result: output,
            at: now,
          });
          await trx
            .updateTable('confirmations')
            .set({ result: JSON.stringify(output) })
            .where('id', '=', options.confirmation.id)
            .execute();
        } else if (logged) {
          actionId = await recordAction(trx, {
            ...base,
            decision: decided,
            reasons,
            status: 'executed',
            result: output,
            objectId: objectIdOf(output),
            at: now,
          });
        }
        stored = { kind: 'executed', output, decision: decided, actionId };
      }

      if (idempotencyKey !== undefined) {
        await trx
          .updateTable('idempotency_keys')
          .set({ response: JSON.stringify(stored) })
          .where('account_id', '=', actor.accountId)
          .where('livemode', '=', actor.livemode)
          .where('key', '=', idempotencyKey)
          .execute();
      }
    });
  } catch (error) {
    // The transaction rolled back: nothing moved. Logged channels still record the failed attempt.
    if (logged && !options.dryRun) await recordFailure(runtime, base, error);
    throw error;
  }

  if (planned) return planned;
  const result = stored!;
  if (result.kind === 'denied') {
    throw new AppError('policy_denied', result.error.message);
  }
  if (result.kind === 'confirmation_required') {
    return { kind: 'confirmation_required', confirmation: result.confirmation, replayed, actionId: result.actionId };
  }
  return { kind: 'executed', output: result.output, replayed, decision: result.decision, actionId: result.actionId };
}

async function replay<O>(
  db: Db,
  actor: Actor,
  key: string,
  requestHash: string,
  tool: string,
): Promise<StoredResult<O>> {
  const existing = await findIdempotencyRecord(db, actor.accountId, actor.livemode, key);
  if (!existing)
    throw new AppError('conflict', 'A request with this Idempotency-Key is still in progress; retry shortly.');
  if (existing.request_hash !== requestHash) {
    throw new AppError(
      'idempotency_conflict',
      `Keys for idempotent requests can only be used with the same parameters they were first used with. This key was first used for ${existing.tool} with different parameters${existing.tool === tool ? '' : ` (not ${tool})`}.`,
    );
  }
  return existing.response as StoredResult<O>;
}

/** Single use: the held action runs only if it is still pending and unexpired, and only once. */
async function consumeConfirmation(
  db: Db,
  confirmation: { id: string; approverKeyId: string },
  actor: Actor,
  now: Date,
): Promise<void> {
  const consumed = await db
    .updateTable('confirmations')
    .set({ status: 'executed', decided_by_key: confirmation.approverKeyId, decided_at: now })
    .where('id', '=', confirmation.id)
    .where('account_id', '=', actor.accountId)
    .where('status', '=', 'pending')
    .where('expires_at', '>', now)
    .returning('id')
    .executeTakeFirst();
  if (!consumed)
    throw new AppError(
      'conflict',
      `Confirmation ${confirmation.id} is no longer pending (already used, rejected or expired).`,
    );
}

async function recordFailure(
  runtime: Runtime,
  base: Omit<Parameters<typeof recordAction>[1], 'decision' | 'reasons' | 'status' | 'at'>,
  error: unknown,
): Promise<void> {
  const appError = toAppError(error);
  // Conflicts about idempotency or a used confirmation are not new actions.
  if (appError.code === 'idempotency_conflict') return;
  try {
    await runtime.db.transaction().execute(async (trx) => {
      await lockAccountActions(trx, base.accountId);
      await recordAction(trx, {
        ...base,
        decision: 'not_checked',
        reasons: [],
        status: 'failed',
        error: appError.toBody().error,
        at: runtime.clock.now(),
      });
    });
  } catch (logError) {
    runtime.logger.error({ err: logError }, 'could not record a failed action');
  }
}

function objectIdOf(output: unknown): string | null {
  const id = (output as { id?: unknown } | null)?.id;
  return typeof id === 'string' ? id : null;
}

export function requireToolScope(actor: Actor, scope: ApiKeyScope): void {
  if (!actor.scopes.has(scope)) {
    throw new AppError('permission_denied', `This API key does not have the '${scope}' scope needed for this action.`);
  }
}

/** The output of a call that must have executed (workers, fixtures); a hold or plan is an error. */
export function executedOutput<O>(result: ToolResult<O>): O {
  if (result.kind !== 'executed') throw new Error(`expected the tool to execute, but it was ${result.kind}`);
  return result.output;
}
