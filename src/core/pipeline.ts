import type { z } from 'zod';
import { lockAccountActions } from '../audit/action-log.ts';
import { advanceHeldAction, recordAction, recordFailedAttempt } from '../audit/actions.ts';
import type { Config } from '../config/config.ts';
import { stringifyJson } from './json-text.ts';
import {
  findIdempotencyRecord,
  insertIdempotencyRecord,
  insertWithIdempotencyRecord,
  isDeadlock,
  isUniqueViolation,
  updateIdempotencyResponse,
} from '../db/repositories/idempotency.ts';
import { isDatabaseUnreachable } from '../db/connect.ts';
import type { Db } from '../db/database.ts';
import type { ActionDecision } from '../db/tables/money.ts';
import type { ApiKeyScope } from '../domain/api-key-secret.ts';
import type { PolicyContext, RuleVerdict } from '../policy/action.ts';
import {
  announceConfirmation,
  type ConfirmationRequired,
  confirmationRequired,
  createConfirmation,
} from '../policy/confirmations.ts';
import { loadPolicyContext, type RunScope } from '../policy/context.ts';
import { evaluatePolicy, type PolicyDecision, summarizeDecision } from '../policy/engine.ts';
import { declaredSpend, NOTHING_DECLARED, type DeclaredCall } from '../policy/run-plan.ts';
import { loadPolicy } from '../policy/store.ts';
import type { Runtime } from '../runtime.ts';
import { canonicalHash, exactRequestHash } from './canonical-json.ts';
import { AppError, type ErrorBody, isConnectionFailure, toAppError } from './errors.ts';
import type { Actor, PolicySubject, SingleInsert, ToolContext, ToolDefinition } from './tool.ts';
import { parseInput } from './validation.ts';

export interface ExecuteOptions {
  runtime: Runtime;
  actor: Actor;
  /** Caller-chosen key: the same (account, mode, key) returns the first result. */
  idempotencyKey?: string | undefined;
  /**
   * The agent run this call belongs to: the action log groups the run's calls by it, and the
   * policy judges the run's money actions together against the confirmation threshold
   * (DESIGN.md §8, docs/policy.md "Agent runs").
   */
  runId?: string | null;
  /**
   * The money calls the run declared it will make, this one included, when the caller knows its
   * whole plan up front (the offline planner). With runId, the confirmation threshold judges the
   * larger of the run's recorded total plus this call, and the plan's total, each planned call
   * converted by its own tool's policy extractor. A plan can only make a decision stricter.
   */
  runPlan?: readonly DeclaredCall[];
  /**
   * The caller's check of the validated input, run after the scope check and before the precheck
   * and the policy: the agent runtime's grounding check (DESIGN.md §9). A throw refuses the call
   * like a validation error: nothing runs, and on logged channels (not in a dry run) the attempt is
   * recorded as a failed action with the error, e.g. code `ungrounded_argument`.
   */
  ground?: (toolName: string, input: unknown) => void;
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
/** What a read or write is judged with: the history rules are money rules. */
const NO_HISTORY: PolicyContext = { spentLast24hSettlementMinor: 0n, knownRecipients: new Set(), run: null };

/**
 * The one path every operation takes (DESIGN.md §4):
 * admit (validate → scope → ground → precheck) → in one transaction: idempotency → judge (policy)
 * → handler + ledger + outbox + action log → typed result. Errors are AppErrors, mapped per
 * transport in one place.
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
  const attempt = {
    accountId: actor.accountId,
    livemode: actor.livemode,
    runId: options.runId ?? null,
    channel: actor.channel,
    keyId: actor.keyId,
    tool: tool.name,
  };
  const input = await admit(tool, rawInput, options, logged, attempt);

  if (!logged && tool.effect === 'read') {
    const output = await tool.handler(input, { runtime, db: runtime.db, actor, now: runtime.clock.now() });
    return { kind: 'executed', output, replayed: false, decision: 'not_checked', actionId: null };
  }

  const requestHash = exactRequestHash({ tool: tool.name, input });
  const base = { ...attempt, input };

  if (tool.singleInsert && !logged && !tool.existing && !options.dryRun && !options.confirmation) {
    const written = await writeSingleInsert(tool, input, options, requestHash);
    if (written) return written;
  }

  let stored: StoredResult<z.output<O>> | undefined;
  let replayed = false;
  let planned: ToolResult<z.output<O>> | undefined;
  try {
    const run = checked ? await runScope(tool, options) : null;
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

      // The caller's own name for what this call creates, used before: what it created, unjudged.
      const prior = options.dryRun || !tool.existing ? undefined : await tool.existing(input, ctx);
      if (prior !== undefined) {
        if (options.confirmation) {
          // A second approved action for the same reference: used up, and it moved nothing new.
          await consumeConfirmation(trx, options.confirmation, actor, now);
          await recordApprovedResult(trx, runtime.config, options.confirmation, actor, prior, now);
        }
        stored = { kind: 'executed', output: prior, decision: 'not_checked', actionId: null };
        replayed = true;
      } else {
        const { subject, decision } = checked
          ? await judge(tool, input, ctx, run, options)
          : { subject: undefined, decision: NOT_CHECKED };
        const decided: ActionDecision = checked ? decision.outcome : 'not_checked';
        const reasons: readonly RuleVerdict[] = decision.reasons;
        const judged = {
          ...base,
          decision: decided,
          reasons,
          amountSettlementMinor: tool.effect === 'money' ? recordableAmount(subject) : null,
        };

        if (options.dryRun && tool.effect !== 'read') {
          const actionId = await recordAction(trx, { ...judged, status: 'planned', at: now });
          planned = { kind: 'planned', decision, summary: subject?.summary ?? null, actionId };
          return;
        }

        if (decision.outcome === 'deny') {
          const error = new AppError(
            'policy_denied',
            `The account policy denies this action: ${summarizeDecision(decision)}.`,
          ).toBody().error;
          if (options.confirmation) {
            // Refused on approval: a failed attempt of the held action, which stays held.
            await recordFailedApproval(trx, options.confirmation, actor, error, now);
          } else {
            await recordAction(trx, { ...judged, status: 'denied', error, at: now });
          }
          stored = { kind: 'denied', error };
        } else if (decision.outcome === 'require_confirmation') {
          const confirmation = await createConfirmation(trx, runtime.config, {
            ...base,
            requestedByKey: actor.keyId,
            inputHash: canonicalHash(input),
            summary: subject?.summary ?? tool.title,
            decision,
            at: now,
          });
          const held = confirmationRequired(runtime.config, confirmation);
          const actionId = await recordAction(trx, {
            ...judged,
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
            await recordApprovedResult(trx, runtime.config, options.confirmation, actor, output, now);
          } else if (logged) {
            actionId = await recordAction(trx, {
              ...judged,
              status: 'executed',
              result: output,
              objectId: objectIdOf(output),
              at: now,
            });
          }
          stored = { kind: 'executed', output, decision: decided, actionId };
        }
      }

      if (idempotencyKey !== undefined) {
        await updateIdempotencyResponse(trx, actor, idempotencyKey, stringifyJson(stored));
      }
    });
  } catch (error) {
    // The transaction rolled back: nothing moved. Logged channels still record the failed attempt.
    if (logged && !options.dryRun) await recordFailure(runtime, base, error, options.confirmation);
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

/**
 * A create that is one row (ToolDefinition.singleInsert) and is neither judged nor logged: the row,
 * the idempotency claim and the stored response in one statement, where the transaction below
 * takes six (BEGIN, claim, the handler's read and insert, the response, COMMIT). Undefined leaves
 * the call to that transaction: the insert wrote nothing (its guard or a conflict stopped it), or
 * the key is taken (the transaction then replays the stored result, or refuses other parameters,
 * exactly as for any key). Nothing was written in either case.
 */
async function writeSingleInsert<I extends z.ZodType, O extends z.ZodType>(
  tool: ToolDefinition<I, O>,
  input: z.output<I>,
  options: ExecuteOptions,
  requestHash: string,
): Promise<ToolResult<z.output<O>> | undefined> {
  const { runtime, actor, idempotencyKey } = options;
  let plan: SingleInsert<z.output<O>> | undefined;
  try {
    plan = await tool.singleInsert!(input, { runtime, db: runtime.db, actor, now: runtime.clock.now() });
  } catch (error) {
    // A refusal (no FX rate, a bad amount) must not answer before the key does: with a key that is
    // taken, the transaction replays the first result or refuses other parameters.
    if (error instanceof AppError) return undefined;
    throw error;
  }
  if (!plan) return undefined;
  const result = (output: z.output<O>): StoredResult<z.output<O>> => ({
    kind: 'executed',
    output,
    decision: 'not_checked',
    actionId: null,
  });
  const response = stringifyJson(result(plan.output(plan.row)));
  let row: unknown;
  try {
    row = await insertWithIdempotencyRecord(
      runtime.db,
      plan.insert,
      idempotencyKey === undefined
        ? undefined
        : {
            accountId: actor.accountId,
            livemode: actor.livemode,
            key: idempotencyKey,
            tool: tool.name,
            requestHash,
            response,
          },
    );
  } catch (error) {
    // 40P01: this statement takes the reference before the key, the transaction the key before
    // the reference; when the two meet on one key and reference, Postgres breaks the tie here.
    if (isUniqueViolation(error) || isDeadlock(error)) return undefined;
    throw error;
  }
  if (row === undefined) return undefined;
  const output = plan.output(row);
  if (idempotencyKey !== undefined && stringifyJson(result(output)) !== response) {
    // The tool's row differs from what the database wrote (a column it did not foresee): a bug.
    // The caller gets what was written, and so does every replay from now on.
    runtime.logger.error({ tool: tool.name }, 'singleInsert stored a response that differs from the row written');
    await updateIdempotencyResponse(runtime.db, actor, idempotencyKey, stringifyJson(result(output)));
  }
  return { kind: 'executed', output, replayed: false, decision: 'not_checked', actionId: null };
}

type Attempt = Omit<Parameters<typeof recordAction>[1], 'input' | 'decision' | 'reasons' | 'status' | 'at'>;

/**
 * Steps 1 and 2 and the checks before any transaction: validate the input, check the scope, let
 * the caller check grounding, run the tool's precheck. What is refused here never ran; what an
 * agent or MCP client tried and was refused is part of the record too (except in a dry run, which
 * records only its plan).
 */
async function admit<I extends z.ZodType, O extends z.ZodType>(
  tool: ToolDefinition<I, O>,
  rawInput: unknown,
  options: ExecuteOptions,
  logged: boolean,
  attempt: Attempt,
): Promise<z.output<I>> {
  const { runtime, actor } = options;
  try {
    const input = parseInput(tool.input, rawInput);
    requireToolScope(actor, tool.scope);
    options.ground?.(tool.name, input);
    await tool.precheck?.(input, { runtime, actor, now: runtime.clock.now() });
    return input;
  } catch (error) {
    if (logged && !options.dryRun)
      await recordFailure(runtime, { ...attempt, input: rawInput ?? null }, error, options.confirmation);
    throw error;
  }
}

/**
 * The agent run a money call counts in, with what the run declared it will move; null outside a
 * run and for other tools. The declared plan is converted before the transaction opens, like a
 * precheck: its extractors only read, and the run's recorded total, read under the account lock,
 * is what keeps concurrent calls honest.
 */
async function runScope(tool: ToolDefinition, options: ExecuteOptions): Promise<RunScope | null> {
  const { runtime, actor, runId, runPlan } = options;
  if (tool.effect !== 'money' || runId === undefined || runId === null) return null;
  const declared =
    runPlan === undefined
      ? NOTHING_DECLARED
      : await declaredSpend(runPlan, { runtime, db: runtime.db, actor, now: runtime.clock.now() });
  return { runId, declared, approvedConfirmationId: options.confirmation?.id ?? null };
}

/**
 * Step 3: what the action moves and to whom (the tool's policy extractor), and the policy's
 * decision on it, in the action's transaction after the account's lock.
 */
async function judge<I extends z.ZodType, O extends z.ZodType>(
  tool: ToolDefinition<I, O>,
  input: z.output<I>,
  ctx: ToolContext,
  run: RunScope | null,
  options: ExecuteOptions,
): Promise<{ subject: PolicySubject | undefined; decision: PolicyDecision }> {
  const { db, actor, now } = ctx;
  const subject = tool.policy ? await tool.policy(input, ctx) : undefined;
  const recipients = subject?.recipients ?? [];
  const context = tool.effect === 'money' ? await loadPolicyContext(db, actor, recipients, now, run) : NO_HISTORY;
  const decision = evaluatePolicy(
    (await loadPolicy(db, actor)).policy,
    {
      tool: tool.name,
      effect: tool.effect,
      channel: actor.channel,
      amountSettlementMinor: subject?.amountSettlementMinor,
      recipients,
    },
    context,
    { satisfiedConfirmation: options.confirmation !== undefined },
  );
  return { subject, decision };
}

/** The amount a later action of the same run counts this one for; none when it is unknown (denied anyway). */
function recordableAmount(subject: PolicySubject | undefined): bigint | null {
  const amount = subject?.amountSettlementMinor;
  return amount !== undefined && amount >= 0n ? amount : null;
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
/**
 * The held action a human approved has run: its log row and its confirmation carry the result,
 * and action.approved announces it in the same transaction.
 */
async function recordApprovedResult(
  db: Db,
  config: Config,
  confirmation: { id: string; approverKeyId: string },
  actor: Actor,
  result: unknown,
  now: Date,
): Promise<void> {
  await advanceHeldAction(db, {
    accountId: actor.accountId,
    livemode: actor.livemode,
    confirmationId: confirmation.id,
    status: 'executed',
    approvedByKey: confirmation.approverKeyId,
    result,
    objectId: objectIdOf(result),
    at: now,
  });
  const approved = await db
    .updateTable('confirmations')
    .set({ result: stringifyJson(result) })
    .where('id', '=', confirmation.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  await announceConfirmation(db, config, approved, 'action.approved', now);
}

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

/**
 * Records a refused or failed call. A failed run of a held action a human approved is a step of
 * that action (its detail lists the attempt), not a new action: one row per action, in its final state.
 */
async function recordFailure(
  runtime: Runtime,
  base: Attempt & { input: unknown },
  error: unknown,
  confirmation: ExecuteOptions['confirmation'],
): Promise<void> {
  const appError = toAppError(error);
  // Conflicts about idempotency are not new actions.
  if (appError.code === 'idempotency_conflict') return;
  try {
    await runtime.db.transaction().execute(async (trx) => {
      await lockAccountActions(trx, base.accountId);
      if (confirmation) {
        await recordFailedApproval(trx, confirmation, base, appError.toBody().error, runtime.clock.now());
        return;
      }
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
    // With the database down the attempt cannot be recorded either; the outage is logged once
    // where the connection was lost (db/connect.ts), and nothing moved.
    if (isConnectionFailure(logError) && isDatabaseUnreachable()) {
      runtime.logger.debug({ err: logError }, 'could not record a failed action');
    } else runtime.logger.error({ err: logError }, 'could not record a failed action');
  }
}

async function recordFailedApproval(
  db: Db,
  confirmation: { id: string; approverKeyId: string },
  actor: { accountId: string; livemode: boolean },
  error: ErrorBody['error'],
  at: Date,
): Promise<void> {
  await recordFailedAttempt(db, {
    accountId: actor.accountId,
    livemode: actor.livemode,
    confirmationId: confirmation.id,
    byKey: confirmation.approverKeyId,
    error,
    at,
  });
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
