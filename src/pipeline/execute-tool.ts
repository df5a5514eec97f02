import type { Transaction } from 'kysely';
import type { z } from 'zod';
import { lockAccountActions, lockActionLogs } from '../audit/action-log.ts';
import { type ActionRecord, advanceHeldAction, recordAction, recordFailedAttempt } from '../audit/actions.ts';
import { canonicalHash, exactRequestHash } from '../core/canonical-json.ts';
import { AppError, type ErrorBody, isConnectionFailure, toAppError } from '../core/errors.ts';
import { stringifyJson } from '../core/json-text.ts';
import type { Actor, PolicySubject, SingleInsert, ToolContext, ToolDefinition, ToolEnvironment } from '../core/tool.ts';
import { parseInput } from '../core/validation.ts';
import { isDatabaseUnreachable } from '../db/connect.ts';
import { recordMoneyApproval, recordMoneyRequest } from '../metrics/metrics.ts';
import type { Database, Db, ModeScope } from '../db/database.ts';
import {
  findIdempotencyRecord,
  insertIdempotencyRecord,
  insertWithIdempotencyRecord,
  isDeadlock,
  isUniqueViolation,
  updateIdempotencyResponse,
} from '../db/repositories/idempotency.ts';
import type { ActionDecision } from '../db/tables/money.ts';
import type { ApiKeyScope } from '../domain/api-key-secret.ts';
import type { PolicyContext, RuleVerdict } from '../policy/action.ts';
import {
  type ConfirmationRequired,
  confirmationRequired,
  consumeConfirmation,
  createConfirmation,
  recordConfirmationResult,
} from '../policy/confirmations.ts';
import { loadPolicyContext, type RunScope, recordPolicySpend } from '../policy/context.ts';
import {
  evaluatePolicy,
  judgingChannels,
  type PolicyDecision,
  strictestDecision,
  summarizeDecision,
} from '../policy/engine.ts';
import { type DeclaredCall, declaredSpend, NOTHING_DECLARED } from '../policy/run-plan.ts';
import { loadPolicy } from '../policy/store.ts';

export interface ExecuteOptions {
  /** The database, the clock and the services tools use (a Runtime is one). */
  runtime: ToolEnvironment;
  actor: Actor;
  /** Caller-chosen key: the same (account, mode, key) returns the first result. */
  idempotencyKey?: string | undefined;
  /**
   * The agent run this call belongs to: the action log groups the run's calls by it, and the
   * policy judges the run's money actions together against the confirmation threshold
   * (docs/policy.md, "Agent runs").
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
   * and the policy: the agent runtime's grounding check (docs/agent.md). A throw refuses the call
   * like a validation error: nothing runs, and on logged channels (not in a dry run) the attempt is
   * recorded as a failed action with the error, e.g. code `ungrounded_argument`.
   */
  ground?: (toolName: string, input: unknown) => void;
  /** Plan only: judge by policy and record the plan, change nothing (reads still run). */
  dryRun?: boolean;
  /** Executing a held action a human approved (see approveConfirmation). */
  confirmation?: { id: string; approverKeyId: string };
  /**
   * The caller's open transaction, for a system run that must commit or roll back with what the
   * caller wrote before it (runSystemToolIn): the run joins it instead of opening its own.
   */
  transaction?: Transaction<Database>;
}

export type ToolResult<O> =
  | {
      kind: 'executed';
      output: O;
      /** The output as JSON text (stringifyJson), when the pipeline wrote it already: send it as is. */
      outputJson?: string;
      replayed: boolean;
      decision: ActionDecision;
      actionId: string | null;
    }
  | { kind: 'confirmation_required'; confirmation: ConfirmationRequired; replayed: boolean; actionId: string | null }
  | { kind: 'planned'; decision: PolicyDecision; summary: string | null; actionId: string | null };

/** What an idempotency record stores: the first result, whatever it was. */
type StoredResult<O> =
  | { kind: 'executed'; output: O; decision: ActionDecision; actionId: string | null }
  | { kind: 'confirmation_required'; confirmation: ConfirmationRequired; actionId: string | null }
  | { kind: 'denied'; error: ErrorBody['error'] };

/** How a call in the transaction ended: a result to store and return, or a plan (never stored). */
type Outcome<O> =
  | { kind: 'stored'; result: StoredResult<O>; replayed: boolean }
  | { kind: 'planned'; result: Extract<ToolResult<O>, { kind: 'planned' }> };

/** An executed result nobody judged: a create written in one statement, what a name created before. */
export function notCheckedResult<O>(output: O): Extract<StoredResult<O>, { kind: 'executed' }> {
  return { kind: 'executed', output, decision: 'not_checked', actionId: null };
}

/** notCheckedResult's JSON text before and after its output, cut from that object's own text. */
const OUTPUT_SLOT = '\u0000output';
const [NOT_CHECKED_BEFORE, NOT_CHECKED_AFTER] = JSON.stringify(notCheckedResult(OUTPUT_SLOT)).split(
  JSON.stringify(OUTPUT_SLOT),
) as [string, string];

/**
 * What stringifyJson writes for notCheckedResult(output) when the output's text is `outputJson`,
 * without writing the output again: a create's stored response (writeSingleInsert).
 */
export function notCheckedResultText(outputJson: string): string {
  return NOT_CHECKED_BEFORE + outputJson + NOT_CHECKED_AFTER;
}

const NOT_CHECKED: PolicyDecision = { outcome: 'allow', reasons: [] };
/** What a read or write is judged with: the history rules are money rules. */
const NO_HISTORY: PolicyContext = { spentLast24hSettlementMinor: 0n, knownRecipients: new Set(), run: null };

/** How the pipeline treats one call, decided once from the tool and the caller. */
interface Call<I extends z.ZodType, O extends z.ZodType> {
  tool: ToolDefinition<I, O>;
  options: ExecuteOptions;
  env: ToolEnvironment;
  actor: Actor;
  /** Recorded in the action log: money tools, system tools, and every agent and MCP call. */
  logged: boolean;
  /** Judged by the policy: logged calls, except the service's own (channel system). */
  judged: boolean;
  /** A refused or failed attempt is recorded too (not in a dry run, not a system run). */
  logsFailures: boolean;
  /** The action-log fields every record of this call shares. */
  attempt: Attempt;
}

/**
 * The one path every operation takes (docs/architecture.md), step by step:
 *
 *   1. validate   the input against the tool's schema
 *   2. authorize  the channel (system tools), the key's scope, the caller's grounding check and the
 *                 tool's precheck; then, in one transaction, each account's action-log lock
 *   3. idempotency  claim the key, or replay the first result
 *   4. policy     what the tool's caller-given name created before (tool.existing), else the
 *                 policy's decision: allow, hold for a human, or deny
 *   5. run        the handler, with what the policy records about it
 *   6. record     the action log, and the result stored under the idempotency key
 *
 * Errors are AppErrors, mapped per transport in one place. Money tools are always judged (except
 * on the service's own `system` channel) and always logged; on the agent and MCP channels every
 * tool call is judged and logged. System tools (tools/system/) run only on the `system` channel,
 * unjudged, and every run that executes is logged in each account it acts for
 * (ToolDefinition.system). A read nobody logs, and a create that is one row, skip the transaction.
 */
export async function executeTool<I extends z.ZodType, O extends z.ZodType>(
  tool: ToolDefinition<I, O>,
  rawInput: unknown,
  options: ExecuteOptions,
): Promise<ToolResult<z.output<O>>> {
  if (options.transaction && !tool.system) {
    throw new Error(`${tool.name} is not a system tool: only a system run joins its caller's transaction`);
  }
  const call = describeCall(tool, options);
  const input = await admit(call, rawInput);

  if (!call.logged && tool.effect === 'read') {
    const output = await tool.handler(input, toolContext(call, call.env.db));
    return { kind: 'executed', output, replayed: false, decision: 'not_checked', actionId: null };
  }
  const requestHash = exactRequestHash({ tool: tool.name, input });
  if (tool.singleInsert && !call.logged && !tool.existing && !options.dryRun && !options.confirmation) {
    const written = await writeSingleInsert(call, input, requestHash);
    if (written) return written;
  }

  let outcome: Outcome<z.output<O>>;
  try {
    const run = call.judged ? await runScope(call) : null;
    outcome = await inTransaction(call, async (trx) => {
      const ctx = toolContext(call, trx);
      const scopes = call.logged ? await lockActionScopes(call, input, ctx) : [];
      const replay = await claimIdempotencyKey<z.output<O>>(call, requestHash, trx);
      if (replay) return { kind: 'stored', result: replay, replayed: true };
      const decided = await decide(call, input, ctx, run, scopes);
      if (decided.kind === 'stored' && options.idempotencyKey !== undefined) {
        await updateIdempotencyResponse(trx, call.actor, options.idempotencyKey, stringifyJson(decided.result));
      }
      return decided;
    });
  } catch (error) {
    // The transaction rolled back: nothing moved. Logged channels still record the failed attempt.
    if (call.logsFailures) await recordFailure(call, { ...call.attempt, input }, error);
    if (!options.dryRun && toAppError(error).code !== 'idempotency_conflict') countFailure(tool.name, options);
    throw error;
  }
  countOutcome(tool.name, outcome, options);
  return resultOf(outcome);
}

/** Runs `work` in the caller's transaction (ExecuteOptions.transaction), or in a new one. */
function inTransaction<T>(
  call: Call<z.ZodType, z.ZodType>,
  work: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  const joined = call.options.transaction;
  return joined ? work(joined) : call.env.db.transaction().execute(work);
}

/**
 * A payout's or refund's request in /metrics, once: a replay or a dry run is no new request. The
 * run of an approved held action is not a new request either (it was counted `held`): it counts
 * in the approvals counter, so that one payout is never both `held` and `executed` there.
 */
function countOutcome(toolName: string, outcome: Outcome<unknown>, options: ExecuteOptions): void {
  if (outcome.kind !== 'stored' || outcome.replayed) return;
  const { kind } = outcome.result;
  if (options.confirmation) {
    recordMoneyApproval(toolName, kind === 'executed' ? 'executed' : kind === 'denied' ? 'denied' : 'failed');
  } else {
    recordMoneyRequest(toolName, kind === 'executed' ? 'executed' : kind === 'denied' ? 'denied' : 'held');
  }
}

/** A request, or the approval of a held one, refused with an error. */
function countFailure(toolName: string, options: ExecuteOptions): void {
  if (options.confirmation) recordMoneyApproval(toolName, 'failed');
  else recordMoneyRequest(toolName, 'failed');
}

function describeCall<I extends z.ZodType, O extends z.ZodType>(
  tool: ToolDefinition<I, O>,
  options: ExecuteOptions,
): Call<I, O> {
  const { actor } = options;
  // An assistant's key is judged and logged on every channel as on MCP (judgingChannels).
  const logged =
    tool.system !== undefined ||
    tool.effect === 'money' ||
    actor.channel === 'agent' ||
    actor.channel === 'mcp' ||
    actor.assistant === true;
  return {
    tool,
    options,
    env: options.runtime,
    actor,
    logged,
    judged: logged && actor.channel !== 'system',
    // A system run that fails changed nothing and is tried again by its worker: not an action.
    logsFailures: logged && !options.dryRun && tool.system === undefined,
    attempt: {
      accountId: actor.accountId,
      livemode: actor.livemode,
      runId: options.runId ?? null,
      channel: actor.channel,
      keyId: actor.keyId,
      tool: tool.name,
    },
  };
}

/** What a tool's handler, policy extractor and precheck receive: the call, and the services it may use. */
function toolContext(call: Call<z.ZodType, z.ZodType>, db: Db): ToolContext {
  const { env } = call;
  return {
    db,
    actor: call.actor,
    now: env.clock.now(),
    config: env.config,
    logger: env.logger,
    rates: env.rates,
    chain: () => env.chain(),
  };
}

type Attempt = Omit<ActionRecord, 'input' | 'decision' | 'reasons' | 'status' | 'at'>;

/**
 * Steps 1 and 2, before any transaction: validate the input, check the channel and the scope, let
 * the caller check grounding, run the tool's precheck. What is refused here never ran; what an
 * agent or MCP client tried and was refused is part of the record too (except in a dry run, which
 * records only its plan).
 */
async function admit<I extends z.ZodType, O extends z.ZodType>(
  call: Call<I, O>,
  rawInput: unknown,
): Promise<z.output<I>> {
  const { tool, actor, options } = call;
  try {
    const input = parseInput(tool.input, rawInput);
    if (tool.system && actor.channel !== 'system') {
      throw new AppError('permission_denied', `${tool.name} is one of the service's own steps; no API key may run it.`);
    }
    requireToolScope(actor, tool.scope);
    options.ground?.(tool.name, input);
    await tool.precheck?.(input, toolContext(call, call.env.db));
    return input;
  } catch (error) {
    if (call.logsFailures) await recordFailure(call, { ...call.attempt, input: rawInput ?? null }, error);
    if (!options.dryRun) countFailure(tool.name, options);
    throw error;
  }
}

/**
 * Step 2, in the transaction: the action-log lock of each account the call writes to (those a
 * many-account system tool names, or the actor's), before the handler takes any row lock. Every
 * logged call takes them first, in account order, so no two wait on each other in a circle. A
 * system run that locked its rows first takes only the free ones (SystemToolSpec.busyAccounts)
 * and acts for those accounts only (ctx.scopes).
 */
async function lockActionScopes(call: Call<z.ZodType, z.ZodType>, input: unknown, ctx: ToolContext) {
  const spec = call.tool.system;
  if (call.options.transaction) {
    // The caller's transaction may already hold row locks: an action-log lock taken after them
    // would be taken in the other order from every money call's, so a joined run acts for no one.
    const named = spec?.accounts ? await spec.accounts(input, ctx) : undefined;
    if (named === undefined || named.length > 0) {
      throw new Error(`${call.tool.name} acts for an account: it cannot run in its caller's transaction`);
    }
    ctx.scopes = [];
    return [];
  }
  if (!spec?.accounts) {
    await lockActionLogs(ctx.db, [call.actor.accountId]);
    return [{ accountId: call.actor.accountId, livemode: call.actor.livemode }];
  }
  const named = await spec.accounts(input, ctx);
  const held = await lockActionLogs(
    ctx.db,
    named.map((scope) => scope.accountId),
    { skipBusy: spec.busyAccounts === 'skip' },
  );
  const scopes = named.filter((scope) => held.has(scope.accountId));
  ctx.scopes = scopes;
  return scopes;
}

/**
 * Step 3: claims the Idempotency-Key for this call, or returns the first result stored under it.
 * A dry run claims nothing (it changes nothing to replay).
 */
async function claimIdempotencyKey<O>(
  call: Call<z.ZodType, z.ZodType>,
  requestHash: string,
  db: Db,
): Promise<StoredResult<O> | undefined> {
  const key = call.options.idempotencyKey;
  if (key === undefined || call.options.dryRun) return undefined;
  const claimed = await insertIdempotencyRecord(db, {
    accountId: call.actor.accountId,
    livemode: call.actor.livemode,
    tool: call.tool.name,
    key,
    requestHash,
  });
  if (claimed) return undefined;
  const existing = await findIdempotencyRecord(db, call.actor.accountId, call.actor.livemode, key);
  if (!existing)
    throw new AppError('conflict', 'A request with this Idempotency-Key is still in progress; retry shortly.');
  if (existing.request_hash !== requestHash) {
    const first = existing.tool;
    throw new AppError(
      'idempotency_conflict',
      `Keys for idempotent requests can only be used with the same parameters they were first used with. This key was first used for ${first} with different parameters${first === call.tool.name ? '' : ` (not ${call.tool.name})`}.`,
    );
  }
  return existing.response as StoredResult<O>;
}

/**
 * Step 4, then 5 and 6: what the caller's name for the object created before (tool.existing), else
 * the policy's decision, and what follows from it: a plan recorded, a denial, a hold for a human,
 * or the handler run and recorded.
 */
async function decide<I extends z.ZodType, O extends z.ZodType>(
  call: Call<I, O>,
  input: z.output<I>,
  ctx: ToolContext,
  run: RunScope | null,
  scopes: readonly ModeScope[],
): Promise<Outcome<z.output<O>>> {
  const { tool, options } = call;
  const prior = options.dryRun || !tool.existing ? undefined : await tool.existing(input, ctx);
  if (prior !== undefined) {
    // The name binds for good: what it created, neither judged nor counted again.
    if (options.confirmation) {
      // A second approved action for the same reference: used up, and it moved nothing new.
      await consumeConfirmation(ctx.db, options.confirmation, call.actor, ctx.now);
      await recordApprovedResult(call, ctx, prior);
    }
    return {
      kind: 'stored',
      result: notCheckedResult(prior),
      replayed: true,
    };
  }

  const { subject, decision } = call.judged
    ? await judge(call, input, ctx, run)
    : { subject: undefined, decision: NOT_CHECKED };
  const judged = {
    ...call.attempt,
    input,
    decision: call.judged ? decision.outcome : ('not_checked' as const),
    reasons: decision.reasons as readonly RuleVerdict[],
    amountSettlementMinor: tool.effect === 'money' ? recordableAmount(subject) : null,
  };
  const { db, now } = ctx;

  if (options.dryRun && tool.effect !== 'read') {
    const actionId = await recordAction(db, { ...judged, status: 'planned', at: now });
    return { kind: 'planned', result: { kind: 'planned', decision, summary: subject?.summary ?? null, actionId } };
  }
  if (decision.outcome === 'deny') {
    const error = new AppError(
      'policy_denied',
      `The account policy denies this action: ${summarizeDecision(decision)}.`,
    ).toBody().error;
    if (options.confirmation) {
      // Refused on approval: a failed attempt of the held action, which stays held.
      await recordFailedApproval(db, options.confirmation, call.actor, error, now);
    } else {
      await recordAction(db, { ...judged, status: 'denied', error, at: now });
    }
    return { kind: 'stored', result: { kind: 'denied', error }, replayed: false };
  }
  if (decision.outcome === 'require_confirmation') {
    const confirmation = await createConfirmation(db, call.env.config, {
      ...call.attempt,
      input,
      requestedByKey: call.actor.keyId,
      inputHash: canonicalHash(input),
      summary: subject?.summary ?? tool.title,
      decision,
      at: now,
    });
    const held = confirmationRequired(call.env.config, confirmation);
    const actionId = await recordAction(db, {
      ...judged,
      status: 'held',
      result: held,
      confirmationId: confirmation.id,
      at: now,
    });
    return { kind: 'stored', result: { kind: 'confirmation_required', confirmation: held, actionId }, replayed: false };
  }

  // Step 5: run.
  if (options.confirmation) await consumeConfirmation(db, options.confirmation, call.actor, now);
  const output = await tool.handler(input, ctx);
  if (tool.effect === 'money' && subject?.amountSettlementMinor !== undefined) {
    // Counted in the cap of every channel that judged it: an assistant's REST payout uses up its
    // assistant (mcp) cap too.
    for (const channel of judgingChannels(call.actor)) {
      await recordPolicySpend(db, {
        actor: { ...call.actor, channel },
        tool: tool.name,
        objectId: objectIdOf(output),
        amountSettlementMinor: subject.amountSettlementMinor,
        at: now,
      });
    }
  }
  // Step 6: record.
  const actionId = await recordExecuted(call, ctx, judged, scopes, output);
  return { kind: 'stored', result: { kind: 'executed', output, decision: judged.decision, actionId }, replayed: false };
}

/**
 * The action-log row of a call that ran: the approved held action's own row, one row per account a
 * many-account system run acted for (with that account's part), or the call's row.
 */
async function recordExecuted(
  call: Call<z.ZodType, z.ZodType>,
  ctx: ToolContext,
  judged: Omit<ActionRecord, 'status' | 'at'>,
  scopes: readonly ModeScope[],
  output: unknown,
): Promise<string | null> {
  const { tool, options } = call;
  const { db, now } = ctx;
  if (options.confirmation) {
    await recordApprovedResult(call, ctx, output);
    return null;
  }
  if (!call.logged) return null;
  if (!tool.system?.accounts) {
    return recordAction(db, { ...judged, status: 'executed', result: output, objectId: objectIdOf(output), at: now });
  }
  let first: string | null = null;
  for (const scope of scopes) {
    const record = tool.system.recordFor ? tool.system.recordFor(judged.input, output, scope) : undefined;
    if (record === undefined) continue;
    const id = await recordAction(db, {
      ...judged,
      accountId: scope.accountId,
      livemode: scope.livemode,
      input: record.input,
      status: 'executed',
      result: record.result,
      objectId: objectIdOf(record.result),
      amountSettlementMinor: record.amountSettlementMinor ?? null,
      at: now,
    });
    first ??= id;
  }
  return first;
}

function resultOf<O>(outcome: Outcome<O>): ToolResult<O> {
  if (outcome.kind === 'planned') return outcome.result;
  const { result, replayed } = outcome;
  if (result.kind === 'denied') throw new AppError('policy_denied', result.error.message);
  if (result.kind === 'confirmation_required') {
    return { kind: 'confirmation_required', confirmation: result.confirmation, replayed, actionId: result.actionId };
  }
  return { kind: 'executed', output: result.output, replayed, decision: result.decision, actionId: result.actionId };
}

/**
 * A create that is one row (ToolDefinition.singleInsert) and is neither judged nor logged: the row,
 * the idempotency claim and the stored response in one statement, where the transaction above
 * takes six (BEGIN, claim, the handler's read and insert, the response, COMMIT). Undefined leaves
 * the call to that transaction: the insert wrote nothing (its guard or a conflict stopped it), or
 * the key is taken (the transaction then replays the stored result, or refuses other parameters,
 * exactly as for any key). Nothing was written in either case.
 */
async function writeSingleInsert<I extends z.ZodType, O extends z.ZodType>(
  call: Call<I, O>,
  input: z.output<I>,
  requestHash: string,
): Promise<ToolResult<z.output<O>> | undefined> {
  const { tool, env, actor } = call;
  const { idempotencyKey } = call.options;
  let plan: SingleInsert<z.output<O>> | undefined;
  try {
    plan = await tool.singleInsert!(input, toolContext(call, env.db));
  } catch (error) {
    // A refusal (no FX rate, a bad amount) must not answer before the key does: with a key that is
    // taken, the transaction replays the first result or refuses other parameters.
    if (error instanceof AppError) return undefined;
    throw error;
  }
  if (!plan) return undefined;
  // The planned output is written once, for the stored response (only with a key to store it
  // under); the row's output once, below, for the check and the reply. Three writes of a payment
  // were 5% of a create's CPU.
  const planned = idempotencyKey === undefined ? undefined : stringifyJson(plan.output(plan.row));
  let row: unknown;
  try {
    row = await insertWithIdempotencyRecord(
      env.db,
      plan.insert,
      idempotencyKey === undefined
        ? undefined
        : {
            accountId: actor.accountId,
            livemode: actor.livemode,
            key: idempotencyKey,
            tool: tool.name,
            requestHash,
            response: notCheckedResultText(planned!),
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
  const outputJson = stringifyJson(output);
  if (idempotencyKey !== undefined && outputJson !== planned) {
    // The tool's row differs from what the database wrote (a column it did not foresee): a bug.
    // The caller gets what was written, and so does every replay from now on.
    env.logger.error({ tool: tool.name }, 'singleInsert stored a response that differs from the row written');
    await updateIdempotencyResponse(env.db, actor, idempotencyKey, notCheckedResultText(outputJson));
  }
  return { kind: 'executed', output, outputJson, replayed: false, decision: 'not_checked', actionId: null };
}

/**
 * The agent run a money call counts in, with what the run declared it will move; null outside a
 * run and for other tools. The declared plan is converted before the transaction opens, like a
 * precheck: its extractors only read, and the run's recorded total, read under the account lock,
 * is what keeps concurrent calls honest.
 */
async function runScope(call: Call<z.ZodType, z.ZodType>): Promise<RunScope | null> {
  const { runId, runPlan, confirmation } = call.options;
  if (call.tool.effect !== 'money' || runId === undefined || runId === null) return null;
  const declared =
    runPlan === undefined ? NOTHING_DECLARED : await declaredSpend(runPlan, toolContext(call, call.env.db));
  return { runId, declared, approvedConfirmationId: confirmation?.id ?? null };
}

/**
 * Step 4: what the action moves and to whom (the tool's policy extractor), and the policy's
 * decision on it, in the action's transaction after the account's lock.
 */
async function judge<I extends z.ZodType, O extends z.ZodType>(
  call: Call<I, O>,
  input: z.output<I>,
  ctx: ToolContext,
  run: RunScope | null,
): Promise<{ subject: PolicySubject | undefined; decision: PolicyDecision }> {
  const { tool } = call;
  const { db, actor, now } = ctx;
  const subject = tool.policy ? await tool.policy(input, ctx) : undefined;
  const recipients = subject?.recipients ?? [];
  const { policy } = await loadPolicy(db, actor);
  const decisions: PolicyDecision[] = [];
  // The call's own channel, and for an assistant's key the assistant channel as well: the
  // strictest of their decisions applies.
  for (const channel of judgingChannels(actor)) {
    const judged = { ...actor, channel };
    const context = tool.effect === 'money' ? await loadPolicyContext(db, judged, recipients, now, run) : NO_HISTORY;
    decisions.push(
      evaluatePolicy(
        policy,
        {
          tool: tool.name,
          effect: tool.effect,
          channel,
          amountSettlementMinor: subject?.amountSettlementMinor,
          recipients,
        },
        context,
        { satisfiedConfirmation: call.options.confirmation !== undefined },
      ),
    );
  }
  return { subject, decision: strictestDecision(decisions) };
}

/** The amount a later action of the same run counts this one for; none when it is unknown (denied anyway). */
function recordableAmount(subject: PolicySubject | undefined): bigint | null {
  const amount = subject?.amountSettlementMinor;
  return amount !== undefined && amount >= 0n ? amount : null;
}

/**
 * The held action a human approved has run: its log row and its confirmation carry the result,
 * and action.approved announces it in the same transaction.
 */
async function recordApprovedResult(call: Call<z.ZodType, z.ZodType>, ctx: ToolContext, result: unknown) {
  const confirmation = call.options.confirmation!;
  await advanceHeldAction(ctx.db, {
    accountId: call.actor.accountId,
    livemode: call.actor.livemode,
    confirmationId: confirmation.id,
    status: 'executed',
    approvedByKey: confirmation.approverKeyId,
    result,
    objectId: objectIdOf(result),
    at: ctx.now,
  });
  await recordConfirmationResult(ctx.db, call.env.config, confirmation.id, result, ctx.now);
}

/**
 * Records a refused or failed call. A failed run of a held action a human approved is a step of
 * that action (its detail lists the attempt), not a new action: one row per action, in its final state.
 */
async function recordFailure(
  call: Call<z.ZodType, z.ZodType>,
  base: Attempt & { input: unknown },
  error: unknown,
): Promise<void> {
  const { env } = call;
  const confirmation = call.options.confirmation;
  const appError = toAppError(error);
  // Conflicts about idempotency are not new actions.
  if (appError.code === 'idempotency_conflict') return;
  try {
    await env.db.transaction().execute(async (trx) => {
      await lockAccountActions(trx, base.accountId);
      if (confirmation) {
        await recordFailedApproval(trx, confirmation, base, appError.toBody().error, env.clock.now());
        return;
      }
      await recordAction(trx, {
        ...base,
        decision: 'not_checked',
        reasons: [],
        status: 'failed',
        error: appError.toBody().error,
        at: env.clock.now(),
      });
    });
  } catch (logError) {
    // With the database down the attempt cannot be recorded either; the outage is logged once
    // where the connection was lost (db/connect.ts), and nothing moved.
    if (isConnectionFailure(logError) && isDatabaseUnreachable()) {
      env.logger.debug({ err: logError }, 'could not record a failed action');
    } else env.logger.error({ err: logError }, 'could not record a failed action');
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

function requireToolScope(actor: Actor, scope: ApiKeyScope): void {
  if (!actor.scopes.has(scope)) {
    throw new AppError('permission_denied', `This API key does not have the '${scope}' scope needed for this action.`);
  }
}

/** The output of a call that must have executed (workers, fixtures); a hold or plan is an error. */
export function executedOutput<O>(result: ToolResult<O>): O {
  if (result.kind !== 'executed') throw new Error(`expected the tool to execute, but it was ${result.kind}`);
  return result.output;
}
