import { setTimeout as delay } from 'node:timers/promises';
import { appendActionLog, lockAccountActions } from '../audit/action-log.ts';
import { AppError, toAppError } from '../core/errors.ts';
import { executeTool } from '../pipeline/execute-tool.ts';
import type { Actor, AnyTool } from '../core/tool.ts';
import type { AgentActionRow, AgentRunRow, AgentRunStatus } from '../db/tables/money.ts';
import { newId } from '../domain/ids.ts';
import { type Currency, formatDisplay, getCurrency, parseMajorAmount, SETTLEMENT_CURRENCY } from '../domain/money.ts';
import { approveUrl } from '../policy/confirmations.ts';
import type { DeclaredCall } from '../policy/run-plan.ts';
import type { Runtime } from '../runtime.ts';
import { checkGrounding, evidenceFromInstruction, type RunEvidence, withToolResult } from './grounding.ts';
import { fixedLater } from './run-status.ts';
import type { AgentModel, AgentModelResult, ModelUsage, PlannedCall, ToolCallOutcome } from './model.ts';
import { systemPrompt } from './prompts.ts';
import { recordAgentRunFinished } from '../metrics/metrics.ts';
import { findAgentRun } from '../db/repositories/agent-runs.ts';

export interface AgentRequest {
  instruction: string;
  dryRun: boolean;
  idempotencyKey: string | undefined;
}

export interface AgentRunView {
  run_id: string;
  object: 'agent_run';
  status: Exclude<AgentRunStatus, 'running'>;
  reply: string;
  model: string;
  dry_run: boolean;
  instruction: string;
  actions: AgentActionView[];
  confirmations: { id: string; summary: string; approve_url: string; expires_at: string }[];
  usage: ModelUsage | null;
  created: string;
}

export interface AgentActionView {
  id: string;
  tool: string;
  input: unknown;
  decision: { outcome: string; reasons: unknown };
  status: string;
  result: unknown;
  error: unknown;
  confirmation_id: string | null;
  approved_by_key: string | null;
  created: string;
}

/**
 * One run of POST /agent/settle: the model plans, every tool call goes through executeTool on the
 * agent channel (validation, scopes, policy, action log), and the run's answer is built from what
 * was recorded, not from what the model claims. The same idempotency key runs once.
 */
export async function runAgent(
  runtime: Runtime,
  model: AgentModel,
  tools: readonly AnyTool[],
  actor: Actor,
  request: AgentRequest,
): Promise<AgentRunView> {
  const now = runtime.clock.now();
  const runId = newId('run');
  if (request.idempotencyKey !== undefined) {
    const existing = await claimRun(runtime, actor, runId, request, model.name, now);
    if (existing) return existing;
  } else {
    await insertRun(runtime, actor, runId, request, model.name, now);
  }

  const usable = tools.filter((tool) => actor.scopes.has(tool.scope));
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error('time budget spent')), runtime.config.agent.timeoutMs);
  const call: RunCall = {
    runtime,
    tools: usable,
    actor,
    runId,
    dryRun: request.dryRun,
    evidence: evidenceFromInstruction(request.instruction, now),
    runPlan: undefined,
    unrecorded: [],
  };
  let steps = 0;
  let status: Exclude<AgentRunStatus, 'running'>;
  let reply: string;
  let usage: ModelUsage | undefined;
  let incomplete: AgentModelIncomplete | undefined;
  try {
    const result = await model.run({
      instruction: request.instruction,
      tools: usable,
      signal: controller.signal,
      now,
      restatesActions: true,
      declarePlan: (calls) => {
        call.runPlan = declaredCalls(usable, calls);
      },
      callTool: async (name, input) => {
        steps += 1;
        if (steps > runtime.config.agent.maxSteps) {
          controller.abort(new Error('step budget spent'));
          return {
            status: 'error',
            error: {
              type: 'invalid_request_error',
              message: `The run used its ${runtime.config.agent.maxSteps} tool calls.`,
            },
          };
        }
        if (controller.signal.aborted) {
          return { status: 'error', error: { type: 'api_error', message: 'The run ran out of time.' } };
        }
        return callThroughPipeline(call, name, input);
      },
    });
    usage = result.usage;
    reply = result.reply;
    incomplete = result.incomplete;
    if (incomplete !== undefined && !reply.includes(incomplete.message)) {
      reply = reply.trim() === '' ? incomplete.message : `${reply}\n\n${incomplete.message}`;
    }
    status = result.understood ? 'completed' : 'rejected';
  } catch (error) {
    runtime.logger.error({ err: error, runId }, 'agent run failed');
    status = 'failed';
    reply = controller.signal.aborted
      ? `The run was stopped: ${String((controller.signal.reason as Error)?.message ?? 'budget spent')}. Actions already recorded stand; see them below.`
      : 'The agent could not finish this instruction (the model did not answer). Nothing further was done; actions already recorded stand.';
  } finally {
    clearTimeout(timer);
  }

  const actions = await runtime.db
    .selectFrom('agent_actions')
    .selectAll()
    .where('run_id', '=', runId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  // What moved decides, whatever the model says: a model that asked back after a payout ran still
  // moved money, and a run that wrote nothing and asked back is rejected.
  const wrote = actions.some((action) => effectOf(usable, action.tool) !== 'read');
  if (status === 'completed' || (wrote && status === 'rejected'))
    status = outcomeOf(actions, call.unrecorded.length > 0);
  // A model cut off at its token limit, or that declined, did not finish: never `completed`.
  if (incomplete !== undefined && status !== 'failed') {
    status = incomplete.reason === 'refusal' ? 'rejected' : 'failed';
  }
  reply = withActionLines(reply, await actionLines(runtime, actor, usable, actions, call.unrecorded));
  await finishRun(
    runtime,
    {
      id: runId,
      account_id: actor.accountId,
      livemode: actor.livemode,
      instruction: request.instruction,
      model: model.name,
      channel: actor.channel,
      key_id: actor.keyId,
      dry_run: request.dryRun,
    },
    {
      status,
      reply,
      steps,
      usage: usage ?? null,
      actionIds: actions.map((a) => a.id),
      promptVersion: systemPrompt().version,
    },
  );
  return loadRunView(runtime, actor, runId);
}

/** What every tool call of one run shares: who calls, the run, and what grounds its money calls. */
interface RunCall {
  runtime: Runtime;
  tools: readonly AnyTool[];
  actor: Actor;
  runId: string;
  dryRun: boolean;
  /** The instruction's and earlier typed results' recipients, amounts and ids (grounding.ts). */
  evidence: RunEvidence;
  /** The money calls the model declared up front, for the policy's run total. */
  runPlan: readonly DeclaredCall[] | undefined;
  /** Refusals a dry run does not record (the pipeline records only its plan), for the reply. */
  unrecorded: UnrecordedRefusal[];
}

interface UnrecordedRefusal {
  tool: string;
  input: unknown;
  message: string;
}

type AgentModelIncomplete = NonNullable<AgentModelResult['incomplete']>;

/** The declared calls as the pipeline takes them: a name this caller has no tool for is ignored. */
function declaredCalls(tools: readonly AnyTool[], calls: readonly PlannedCall[]): DeclaredCall[] {
  return calls.flatMap((planned) => {
    const tool = tools.find((t) => t.name === planned.name);
    return tool ? [{ tool, input: planned.input }] : [];
  });
}

async function callThroughPipeline(call: RunCall, name: string, input: unknown): Promise<ToolCallOutcome> {
  const { runtime, actor, runId, dryRun } = call;
  const tool = call.tools.find((t) => t.name === name);
  if (!tool) {
    return {
      status: 'error',
      error: { type: 'invalid_request_error', message: `There is no tool '${name}' available to this key.` },
    };
  }
  try {
    const result = await executeTool(tool, input, {
      runtime,
      actor,
      runId,
      dryRun,
      ...(call.runPlan !== undefined ? { runPlan: call.runPlan } : {}),
      // Grounding (DESIGN.md §9): the pipeline calls this on the validated input and records a refusal.
      ground: (toolName, validated) => checkGrounding(toolName, validated, call.evidence),
    });
    if (result.kind === 'confirmation_required') {
      const c = result.confirmation;
      return {
        status: 'confirmation_required',
        confirmation: {
          id: c.confirmation_id,
          summary: c.summary,
          approve_url: c.approve_url,
          expires_at: c.expires_at,
        },
      };
    }
    if (result.kind === 'planned') {
      // A plan read nothing: it grounds nothing later in the run.
      return {
        status: 'ok',
        output: {
          dry_run: true,
          would_be: result.decision.outcome,
          summary: result.summary,
          reasons: result.decision.reasons,
        },
      };
    }
    // Only reads ground later calls: what a write or a money call echoes back (a payment created
    // with an invented payout address, a payout's amount) is the model's own input, not evidence.
    if (tool.effect === 'read') call.evidence = withToolResult(call.evidence, result.output);
    return { status: 'ok', output: result.output };
  } catch (error) {
    const appError = toAppError(error);
    const body = appError.toBody().error;
    if (dryRun && tool.effect !== 'read') call.unrecorded.push({ tool: tool.name, input, message: body.message });
    return { status: 'error', error: body };
  }
}

function effectOf(tools: readonly AnyTool[], name: string): string | undefined {
  return tools.find((tool) => tool.name === name)?.effect;
}

/**
 * The run's status from each action's final state (issue 32): a failed call the model made again,
 * fixed, on the same target is judged by the fix (run-status.ts). Then: failed if any
 * action failed (a dry run's refused call is not recorded, but fails the run as the same call
 * would have failed a real one); rejected if policy denied one; held if any is held; else completed.
 */
function outcomeOf(actions: readonly AgentActionRow[], refusedUnrecorded: boolean): Exclude<AgentRunStatus, 'running'> {
  const fixed = fixedLater(actions.map((a) => ({ tool: a.tool, input: a.input, failed: a.status === 'failed' })));
  const final = actions.filter((_action, i) => !fixed.has(i));
  if (refusedUnrecorded || final.some((a) => a.status === 'failed')) return 'failed';
  if (final.some((a) => a.status === 'denied')) return 'rejected';
  if (final.some((a) => a.status === 'held')) return 'confirmation_required';
  return 'completed';
}

/**
 * The reply's check list (issue 13 point 6): one line per write or money action of the run, built
 * from what was recorded, not from what the model says: the action in plain words (amount,
 * currency, recipient or payment, memo) and its outcome. Reads are left out.
 */
async function actionLines(
  runtime: Runtime,
  actor: Actor,
  tools: readonly AnyTool[],
  actions: readonly AgentActionRow[],
  unrecorded: readonly UnrecordedRefusal[],
): Promise<string[]> {
  const effectOf = (name: string): string | undefined => tools.find((t) => t.name === name)?.effect;
  const changes = actions.filter((a) => effectOf(a.tool) !== undefined && effectOf(a.tool) !== 'read');
  const currencies = await paymentCurrencies(runtime, actor, [
    ...changes.map((a) => a.input),
    ...unrecorded.map((r) => r.input),
  ]);
  const titleOf = (name: string): string => tools.find((t) => t.name === name)?.title ?? name;
  const lines = changes.map(
    (a) => `${describeAction(a.tool, a.input, a.result, currencies, titleOf)}: ${describeOutcomeOf(runtime, a)}.`,
  );
  for (const refused of unrecorded) {
    const what = describeAction(refused.tool, refused.input, null, currencies, titleOf);
    lines.push(`${what}: would be refused — ${oneLine(refused.message)}; nothing moved.`);
  }
  return lines;
}

/** The model's reply, then the check list, unless the reply already holds every line of it. */
function withActionLines(reply: string, lines: readonly string[]): string {
  if (lines.length === 0 || lines.every((line) => reply.includes(line))) return reply;
  const list = `Actions:\n${lines.map((line) => `- ${line}`).join('\n')}`;
  return reply.trim() === '' ? list : `${reply}\n\n${list}`;
}

type Fields = Record<string, unknown>;

function fieldsOf(value: unknown): Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Fields) : {};
}

/** The currency of each payment a refund names, for amounts whose result does not carry it. */
async function paymentCurrencies(
  runtime: Runtime,
  actor: Actor,
  inputs: readonly unknown[],
): Promise<Map<string, Currency>> {
  const ids = [
    ...new Set(inputs.map((input) => fieldsOf(input).payment_id).filter((id): id is string => typeof id === 'string')),
  ];
  if (ids.length === 0) return new Map();
  const rows = await runtime.db
    .selectFrom('payments')
    .select(['id', 'currency'])
    .where('account_id', '=', actor.accountId)
    .where('livemode', '=', actor.livemode)
    .where('id', 'in', ids)
    .execute();
  return new Map(
    rows.flatMap((row) => {
      const currency = getCurrency(row.currency);
      return currency ? [[row.id, currency] as const] : [];
    }),
  );
}

/** "250.000000 USDC", "₦5,000.00"; the number as given when it is not a valid amount of the currency. */
function money(amount: unknown, currency: Currency | undefined, fallbackCode: string): string {
  if (typeof amount === 'number' && currency !== undefined) {
    const parsed = parseMajorAmount(amount, currency);
    if (parsed.ok) return formatDisplay(parsed.minor, currency);
  }
  const code = currency?.code ?? fallbackCode;
  return code === '' ? String(amount) : `${String(amount)} ${code}`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function describeAction(
  tool: string,
  input: unknown,
  result: unknown,
  currencies: ReadonlyMap<string, Currency>,
  titleOf: (name: string) => string,
): string {
  const given = fieldsOf(input);
  const done = fieldsOf(result);
  switch (tool) {
    case 'create_payout': {
      const memo = typeof given.memo === 'string' ? ` (memo: ${oneLine(given.memo)})` : '';
      return `Pay out ${money(given.amount, SETTLEMENT_CURRENCY, 'USDC')} to ${String(given.to_address)}${memo}`;
    }
    case 'refund_payment': {
      const paymentId = String(given.payment_id);
      const reason = typeof given.reason === 'string' ? ` (reason: ${oneLine(given.reason)})` : '';
      // An executed refund says what it refunded; otherwise the input's amount, or "what is left".
      const currency = typeof done.currency === 'string' ? getCurrency(done.currency) : currencies.get(paymentId);
      const amount = typeof done.amount === 'number' ? done.amount : given.amount;
      // A Paystack refund is pending until Paystack has paid the payer: the reply must not say more.
      const pending = done.status === 'pending' ? ' (pending: Paystack is paying it back to the payer)' : '';
      if (amount === undefined) return `Refund what is left of ${paymentId}${reason}${pending}`;
      return `Refund ${money(amount, currency, '')} of ${paymentId}${reason}${pending}`;
    }
    case 'split_revenue': {
      const amount = typeof done.amount === 'number' ? done.amount : given.amount;
      const what =
        amount !== undefined
          ? `${money(amount, SETTLEMENT_CURRENCY, 'USDC')}${typeof given.payment_id === 'string' ? ` of ${given.payment_id}` : ''}`
          : `the proceeds of ${String(given.payment_id)}`;
      const splits = Array.isArray(given.splits) ? given.splits.map(fieldsOf) : [];
      const parts = splits.reduce((sum, leg) => sum + (typeof leg.share_parts === 'number' ? leg.share_parts : 0), 0);
      const share = (leg: Fields): string =>
        typeof leg.share_parts === 'number'
          ? `${leg.share_parts} of ${parts} parts`
          : `${Number(leg.share_bps) / 100}%`;
      const legs = splits.map((leg) => `${String(leg.to_address)} (${share(leg)})`).join(', ');
      return `Split ${what} between ${legs}`;
    }
    default: {
      const currency = typeof given.currency === 'string' ? getCurrency(given.currency.toUpperCase()) : undefined;
      const amount =
        given.amount !== undefined ? ` of ${money(given.amount, currency, String(given.currency ?? ''))}` : '';
      return `${titleOf(tool)}${amount}`;
    }
  }
}

function describeOutcomeOf(runtime: Runtime, action: AgentActionRow): string {
  const error = fieldsOf(action.error);
  const why = typeof error.message === 'string' ? oneLine(error.message) : 'no reason recorded';
  switch (action.status) {
    case 'executed': {
      const result = fieldsOf(action.result);
      const id = typeof result.id === 'string' ? result.id : undefined;
      const state = typeof result.status === 'string' ? result.status : undefined;
      const detail = [id, state].filter((part) => part !== undefined).join(', ');
      return detail === '' ? 'done' : `done (${detail})`;
    }
    case 'held':
      return action.confirmation_id
        ? `held for approval — approve at ${approveUrl(runtime.config, action.confirmation_id)}`
        : 'held for approval';
    case 'denied':
    case 'failed':
      return `refused — ${why}`;
    case 'rejected':
      return 'rejected by an approver; nothing moved';
    case 'planned': {
      const would =
        action.decision === 'require_confirmation'
          ? 'would be held for approval'
          : action.decision === 'deny'
            ? 'would be refused by the account policy'
            : 'would be done';
      return `${would}; nothing moved (dry run)`;
    }
  }
}

async function insertRun(
  runtime: Runtime,
  actor: Actor,
  runId: string,
  request: AgentRequest,
  modelName: string,
  now: Date,
): Promise<boolean> {
  const inserted = await runtime.db
    .insertInto('agent_runs')
    .values({
      id: runId,
      account_id: actor.accountId,
      livemode: actor.livemode,
      channel: actor.channel,
      key_id: actor.keyId,
      instruction: request.instruction,
      model: modelName,
      dry_run: request.dryRun,
      idempotency_key: request.idempotencyKey ?? null,
      status: 'running',
      reply: '',
      created_at: now,
    })
    .onConflict((oc) =>
      oc.columns(['account_id', 'livemode', 'idempotency_key']).where('idempotency_key', 'is not', null).doNothing(),
    )
    .executeTakeFirst();
  return (inserted.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

/** Claims the idempotency key; if another run holds it, waits for that run and returns it. */
async function claimRun(
  runtime: Runtime,
  actor: Actor,
  runId: string,
  request: AgentRequest,
  modelName: string,
  now: Date,
): Promise<AgentRunView | undefined> {
  if (await insertRun(runtime, actor, runId, request, modelName, now)) return undefined;
  const deadline = Date.now() + runtime.config.agent.timeoutMs + 5000;
  for (;;) {
    const existing = await runtime.db
      .selectFrom('agent_runs')
      .selectAll()
      .where('account_id', '=', actor.accountId)
      .where('livemode', '=', actor.livemode)
      .where('idempotency_key', '=', request.idempotencyKey!)
      .executeTakeFirstOrThrow();
    if (existing.instruction !== request.instruction || existing.dry_run !== request.dryRun) {
      throw new AppError('idempotency_conflict', 'This idempotency_key was first used with a different instruction.', {
        param: 'idempotency_key',
      });
    }
    if (existing.status !== 'running') return loadRunView(runtime, actor, existing.id);
    if (await closeInterruptedRun(runtime, existing)) return loadRunView(runtime, actor, existing.id);
    if (Date.now() > deadline)
      throw new AppError('conflict', 'A run with this idempotency_key is still in progress; retry shortly.');
    await delay(100);
  }
}

/** How long past its time budget a run may still be `running` before it counts as interrupted. */
const INTERRUPTED_AFTER_MS = 60_000;

/**
 * A run still `running` well past its time budget was interrupted: the process running it stopped
 * before recording its end. It is closed as failed (once, compare-and-set, with its run.finished
 * entry in the action log) so that a retry with its idempotency_key gets an answer instead of
 * "in progress" forever. It is not run again: actions it took before stopping are recorded and
 * stand, and running the instruction a second time could repeat them.
 */
async function closeInterruptedRun(runtime: Runtime, run: AgentRunRow): Promise<boolean> {
  if (
    runtime.clock.now().getTime() - run.created_at.getTime() <=
    runtime.config.agent.timeoutMs + INTERRUPTED_AFTER_MS
  ) {
    return false;
  }
  const actions = await runtime.db.selectFrom('agent_actions').select('id').where('run_id', '=', run.id).execute();
  return finishRun(runtime, run, {
    status: 'failed',
    reply:
      'This run was interrupted: the service stopped before it finished. Actions already recorded stand; see them below. Send the instruction again with a new idempotency_key to continue.',
    steps: run.steps,
    usage: null,
    actionIds: actions.map((a) => a.id),
    promptVersion: null,
    interrupted: true,
  });
}

type RunIdentity = Pick<
  AgentRunRow,
  'id' | 'account_id' | 'livemode' | 'instruction' | 'model' | 'channel' | 'key_id' | 'dry_run'
>;

interface RunOutcome {
  status: Exclude<AgentRunStatus, 'running'>;
  reply: string;
  steps: number;
  usage: ModelUsage | null;
  actionIds: string[];
  /** The system prompt the run used; null when not known (an interrupted run). */
  promptVersion: string | null;
  interrupted?: true;
}

/**
 * Records the end of a run, once: its row (only while it is still `running`) and its run.finished
 * entry in the action log, in one transaction. False when the run had already ended.
 */
async function finishRun(runtime: Runtime, run: RunIdentity, outcome: RunOutcome): Promise<boolean> {
  const at = runtime.clock.now();
  const recorded = await runtime.db.transaction().execute(async (trx) => {
    await lockAccountActions(trx, run.account_id);
    const ended = await trx
      .updateTable('agent_runs')
      .set({
        status: outcome.status,
        reply: outcome.reply,
        steps: outcome.steps,
        usage: outcome.usage ? JSON.stringify(outcome.usage) : null,
        finished_at: at,
      })
      .where('id', '=', run.id)
      .where('status', '=', 'running')
      .executeTakeFirst();
    if (Number(ended.numUpdatedRows) !== 1) return false;
    await appendActionLog(trx, {
      accountId: run.account_id,
      livemode: run.livemode,
      entryType: 'run.finished',
      runId: run.id,
      payload: {
        instruction: run.instruction,
        model: run.model,
        prompt_version: outcome.promptVersion,
        channel: run.channel,
        key_id: run.key_id,
        dry_run: run.dry_run,
        status: outcome.status,
        reply: outcome.reply,
        steps: outcome.steps,
        usage: outcome.usage,
        actions: outcome.actionIds,
        ...(outcome.interrupted ? { interrupted: true } : {}),
      },
      at,
    });
    return true;
  });
  if (recorded) recordAgentRunFinished(outcome.status);
  return recorded;
}

export async function loadRunView(
  runtime: Runtime,
  scope: { accountId: string; livemode: boolean },
  runId: string,
): Promise<AgentRunView> {
  const run = await findAgentRun(runtime.db, scope, runId);
  if (!run) throw new AppError('not_found', `No such agent run: '${runId}'.`, { param: 'id' });
  const actions = await runtime.db
    .selectFrom('agent_actions')
    .selectAll()
    .where('run_id', '=', runId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const confirmationIds = actions.map((a) => a.confirmation_id).filter((id): id is string => id !== null);
  const confirmations =
    confirmationIds.length === 0
      ? []
      : await runtime.db
          .selectFrom('confirmations')
          .selectAll()
          .where('id', 'in', confirmationIds)
          .orderBy('created_at')
          .execute();
  return presentRun(runtime, run, actions, confirmations);
}

export function presentRun(
  runtime: Runtime,
  run: AgentRunRow,
  actions: readonly AgentActionRow[],
  confirmations: readonly { id: string; summary: string; expires_at: Date }[],
): AgentRunView {
  return {
    run_id: run.id,
    object: 'agent_run',
    status: run.status === 'running' ? 'failed' : run.status,
    reply: run.reply,
    model: run.model,
    dry_run: run.dry_run,
    instruction: run.instruction,
    actions: actions.map(presentAction),
    confirmations: confirmations.map((c) => ({
      id: c.id,
      summary: c.summary,
      approve_url: approveUrl(runtime.config, c.id),
      expires_at: c.expires_at.toISOString(),
    })),
    usage: (run.usage as ModelUsage | null) ?? null,
    created: run.created_at.toISOString(),
  };
}

export function presentAction(row: AgentActionRow): AgentActionView {
  return {
    id: row.id,
    tool: row.tool,
    input: row.input,
    decision: { outcome: row.decision, reasons: row.reasons },
    status: row.status,
    result: row.result ?? null,
    error: row.error ?? null,
    confirmation_id: row.confirmation_id,
    approved_by_key: row.approved_by_key,
    created: row.created_at.toISOString(),
  };
}
