import { setTimeout as delay } from 'node:timers/promises';
import { appendActionLog, lockAccountActions } from '../audit/action-log.ts';
import { AppError, toAppError } from '../core/errors.ts';
import { executeTool } from '../pipeline/execute-tool.ts';
import type { Actor, AnyTool, ToolEnvironment } from '../core/tool.ts';
import type { AgentActionRow, AgentRunMessageRow, AgentRunRow, AgentRunStatus } from '../db/tables/money.ts';
import { newId } from '../domain/ids.ts';
import { type Currency, formatDisplay, getCurrency, parseMajorAmount, SETTLEMENT_CURRENCY } from '../domain/money.ts';
import { approveUrl } from '../policy/confirmations.ts';
import type { DeclaredCall } from '../policy/run-plan.ts';
import { checkGrounding, evidenceFromInstruction, type RunEvidence, withToolResult } from './grounding.ts';
import { fixedLater } from './run-status.ts';
import type { AgentModel, AgentModelResult, ModelUsage, PlannedCall, ToolCallOutcome } from './model.ts';
import { systemPrompt } from './prompts.ts';
import { recordAgentRunFinished } from '../metrics/metrics.ts';
import {
  findAgentRun,
  getAgentRunByIdempotencyKey,
  insertAgentRun,
  endAgentRun,
  listLapsedQuestionRuns,
  resumeAnsweredRun,
} from '../db/repositories/agent-runs.ts';
import { listExecutedRunResults, listRunActionIds, listRunActions } from '../db/repositories/agent-actions.ts';
import {
  findAnswerByIdempotencyKey,
  insertRunMessage,
  lastAnswerAt,
  lastMessageSeq,
  listRunMessages,
} from '../db/repositories/agent-run-messages.ts';
import { listConfirmationsById } from '../db/repositories/confirmations.ts';
import { listPaymentCurrencies } from '../db/repositories/payments.ts';
import {
  ANSWER_WITHIN_MS,
  type ConversationTurn,
  conversationInstruction,
  merchantText,
  type ProposedCall,
  readReply,
  withNewAmount,
} from './conversation.ts';

export interface AgentRequest {
  instruction: string;
  dryRun: boolean;
  idempotencyKey: string | undefined;
}

export interface AgentRunView {
  id: string;
  object: 'agent_run';
  /** Deprecated: the same as id (docs/api.md, "Renamed in this release"). */
  run_id: string;
  status: Exclude<AgentRunStatus, 'running'>;
  reply: string;
  model: string;
  dry_run: boolean;
  instruction: string;
  actions: AgentActionView[];
  confirmations: { id: string; object: 'confirmation'; summary: string; approve_url: string; expires_at: string }[];
  usage: ModelUsage | null;
  created: string;
  /** Every turn: the merchant's instruction first, then each question and answer, in order. */
  conversation: { role: 'merchant' | 'agent'; text: string; created: string }[];
  /** While the run waits (`needs_input`): what it asks, what it proposes, and until when. */
  question: { text: string; proposed_actions: ProposedCall[]; answer_by: string } | null;
}

export interface AgentReplyRequest {
  message: string;
  idempotencyKey: string | undefined;
}

export interface AgentActionView {
  id: string;
  object: 'agent_action';
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
 * was recorded, not from what the model claims. The same idempotency key runs once. A run that
 * cannot act and moved nothing asks back and waits for the merchant's answer (`needs_input`,
 * replyToRun).
 */
export async function runAgent(
  env: ToolEnvironment,
  model: AgentModel,
  tools: readonly AnyTool[],
  actor: Actor,
  request: AgentRequest,
): Promise<AgentRunView> {
  const now = env.clock.now();
  const runId = newId('run');
  if (request.idempotencyKey !== undefined) {
    const existing = await claimRun(env, actor, runId, request, model.name, now);
    if (existing) return existing;
  } else {
    await insertRun(env, actor, runId, request, model.name, now);
  }
  const usable = tools.filter((tool) => actor.scopes.has(tool.scope));
  const run: RunIdentity = {
    id: runId,
    account_id: actor.accountId,
    livemode: actor.livemode,
    instruction: request.instruction,
    model: model.name,
    channel: actor.channel,
    key_id: actor.keyId,
    dry_run: request.dryRun,
  };
  const call = newRunCall(env, usable, actor, run, evidenceFromInstruction(request.instruction, now));
  const turn = await modelTurn(call, model, { instruction: request.instruction, now });
  await endTurn(call, run, turn, { steps: 0, usage: null, nextSeq: 1 });
  return loadRunView(env, actor, runId);
}

/** What one turn of a run did, before its status is judged from the recorded actions. */
interface TurnResult {
  /** Before the actions are read: completed (understood), rejected, or failed (the model broke). */
  status: Exclude<AgentRunStatus, 'running'>;
  reply: string;
  steps: number;
  usage: ModelUsage | undefined;
  incomplete: AgentModelIncomplete | undefined;
  /** The model asked the merchant, maybe proposing calls (AgentModelResult.question). */
  question: { proposed: readonly PlannedCall[] } | undefined;
}

function newRunCall(
  env: ToolEnvironment,
  tools: readonly AnyTool[],
  actor: Actor,
  run: RunIdentity,
  evidence: RunEvidence,
): RunCall {
  return {
    env,
    tools,
    actor,
    runId: run.id,
    dryRun: run.dry_run,
    evidence,
    runPlan: undefined,
    unrecorded: [],
  };
}

/** One turn of the model over the run's tools, bounded by the run's step and time budgets. */
async function modelTurn(
  call: RunCall,
  model: AgentModel,
  request: { instruction: string; now: Date; conversation?: readonly ConversationTurn[] },
): Promise<TurnResult> {
  const { env } = call;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error('time budget spent')), env.config.agent.timeoutMs);
  let steps = 0;
  try {
    const result = await model.run({
      instruction: request.instruction,
      ...(request.conversation !== undefined ? { conversation: request.conversation } : {}),
      tools: call.tools,
      signal: controller.signal,
      now: request.now,
      restatesActions: true,
      declarePlan: (calls) => {
        call.runPlan = declaredCalls(call.tools, calls);
      },
      callTool: async (name, input) => {
        steps += 1;
        if (steps > env.config.agent.maxSteps) {
          controller.abort(new Error('step budget spent'));
          return {
            status: 'error',
            error: {
              type: 'invalid_request_error',
              message: `The run used its ${env.config.agent.maxSteps} tool calls.`,
            },
          };
        }
        if (controller.signal.aborted) {
          return { status: 'error', error: { type: 'api_error', message: 'The run ran out of time.' } };
        }
        return callThroughPipeline(call, name, input);
      },
    });
    let reply = result.reply;
    const incomplete = result.incomplete;
    if (incomplete !== undefined && !reply.includes(incomplete.message)) {
      reply = reply.trim() === '' ? incomplete.message : `${reply}\n\n${incomplete.message}`;
    }
    return {
      status: result.understood ? 'completed' : 'rejected',
      reply,
      steps,
      usage: result.usage,
      incomplete,
      question: incomplete === undefined ? result.question : undefined,
    };
  } catch (error) {
    env.logger.error({ err: error, runId: call.runId }, 'agent run failed');
    const reply = controller.signal.aborted
      ? `The run was stopped: ${String((controller.signal.reason as Error)?.message ?? 'budget spent')}. Actions already recorded stand; see them below.`
      : 'The agent could not finish this instruction (the model did not answer). Nothing further was done; actions already recorded stand.';
    return { status: 'failed', reply, steps, usage: undefined, incomplete: undefined, question: undefined };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Ends a turn: the run's status from what was recorded (what moved decides, whatever the model
 * says), the reply with its check list, and the run's row and run.finished entry. A turn that
 * asked back and wrote nothing leaves the run waiting for the answer (`needs_input`), its question
 * and proposed calls kept as the next turn of the conversation.
 */
async function endTurn(
  call: RunCall,
  run: RunIdentity,
  turn: TurnResult,
  before: { steps: number; usage: ModelUsage | null; nextSeq: number },
): Promise<void> {
  const { env, actor, tools } = call;
  const actions = await listRunActions(env.db, run.id);
  let status = turn.status;
  // What moved decides, whatever the model says: a model that asked back after a payout ran still
  // moved money, and a run that wrote nothing and asked back is rejected.
  const wrote = actions.some((action) => effectOf(tools, action.tool) !== 'read');
  if (status === 'completed' || (wrote && status === 'rejected'))
    status = outcomeOf(actions, call.unrecorded.length > 0);
  // A model cut off at its token limit, or that declined, did not finish: never `completed`.
  if (turn.incomplete !== undefined && status !== 'failed') {
    status = turn.incomplete.reason === 'refusal' ? 'rejected' : 'failed';
  }
  let question: RunOutcome['question'];
  let reply = turn.reply;
  if (turn.question !== undefined && !wrote && status === 'rejected') {
    const proposed = proposedCalls(tools, turn.question.proposed);
    const currencies = await paymentCurrencies(
      env,
      actor,
      proposed.map((p) => p.input),
    );
    const titleOf = (name: string): string => tools.find((t) => t.name === name)?.title ?? name;
    if (proposed.length > 0) {
      const shown = proposed.map((p) => `- ${describeAction(p.tool, p.input, null, currencies, titleOf)}`);
      reply = `${reply}\n\nProposed (nothing moves until you answer):\n${shown.join('\n')}\nAnswer "yes" to run exactly this, a new amount to run it with that amount, or "no" to cancel.`;
    }
    status = 'needs_input';
    question = { proposed, answerBy: new Date(env.clock.now().getTime() + ANSWER_WITHIN_MS), seq: before.nextSeq };
  }
  if (question === undefined)
    reply = withActionLines(reply, await actionLines(env, actor, tools, actions, call.unrecorded));
  await finishRun(env, run, {
    status,
    reply,
    steps: before.steps + turn.steps,
    usage: sumUsage(before.usage, turn.usage),
    actionIds: actions.map((a) => a.id),
    promptVersion: systemPrompt().version,
    ...(question !== undefined ? { question } : {}),
  });
}

/**
 * The proposed calls as they are kept and shown: only tools this caller has, each input an object.
 * A proposal naming any other tool is dropped whole: running part of it would not be what was shown.
 */
function proposedCalls(tools: readonly AnyTool[], calls: readonly PlannedCall[]): ProposedCall[] {
  const kept = calls.flatMap((planned) =>
    tools.some((tool) => tool.name === planned.name) &&
    typeof planned.input === 'object' &&
    planned.input !== null &&
    !Array.isArray(planned.input)
      ? [{ tool: planned.name, input: planned.input as Record<string, unknown> }]
      : [],
  );
  return kept.length === calls.length ? kept : [];
}

function sumUsage(before: ModelUsage | null, turn: ModelUsage | undefined): ModelUsage | null {
  if (turn === undefined) return before;
  if (before === null) return turn;
  return {
    input_tokens: before.input_tokens + turn.input_tokens,
    output_tokens: before.output_tokens + turn.output_tokens,
    cache_read_input_tokens: before.cache_read_input_tokens + turn.cache_read_input_tokens,
    cache_creation_input_tokens: before.cache_creation_input_tokens + turn.cache_creation_input_tokens,
  };
}

/** What every tool call of one run shares: who calls, the run, and what grounds its money calls. */
interface RunCall {
  env: ToolEnvironment;
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
  const { env, actor, runId, dryRun } = call;
  const tool = call.tools.find((t) => t.name === name);
  if (!tool) {
    return {
      status: 'error',
      error: { type: 'invalid_request_error', message: `There is no tool '${name}' available to this key.` },
    };
  }
  try {
    const result = await executeTool(tool, input, {
      runtime: env,
      actor,
      runId,
      dryRun,
      ...(call.runPlan !== undefined ? { runPlan: call.runPlan } : {}),
      // Grounding (docs/agent.md): the pipeline calls this on the validated input and records a refusal.
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
  env: ToolEnvironment,
  actor: Actor,
  tools: readonly AnyTool[],
  actions: readonly AgentActionRow[],
  unrecorded: readonly UnrecordedRefusal[],
): Promise<string[]> {
  const effectOf = (name: string): string | undefined => tools.find((t) => t.name === name)?.effect;
  const changes = actions.filter((a) => effectOf(a.tool) !== undefined && effectOf(a.tool) !== 'read');
  const currencies = await paymentCurrencies(env, actor, [
    ...changes.map((a) => a.input),
    ...unrecorded.map((r) => r.input),
  ]);
  const titleOf = (name: string): string => tools.find((t) => t.name === name)?.title ?? name;
  const lines = changes.map(
    (a) => `${describeAction(a.tool, a.input, a.result, currencies, titleOf)}: ${describeOutcomeOf(env, a)}.`,
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
  env: ToolEnvironment,
  actor: Actor,
  inputs: readonly unknown[],
): Promise<Map<string, Currency>> {
  const ids = [
    ...new Set(inputs.map((input) => fieldsOf(input).payment_id).filter((id): id is string => typeof id === 'string')),
  ];
  if (ids.length === 0) return new Map();
  const rows = await listPaymentCurrencies(env.db, actor, ids);
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

function describeOutcomeOf(env: ToolEnvironment, action: AgentActionRow): string {
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
        ? `held for approval — approve at ${approveUrl(env.config, action.confirmation_id)}`
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
  env: ToolEnvironment,
  actor: Actor,
  runId: string,
  request: AgentRequest,
  modelName: string,
  now: Date,
): Promise<boolean> {
  return insertAgentRun(env.db, {
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
  });
}

/** Claims the idempotency key; if another run holds it, waits for that run and returns it. */
async function claimRun(
  env: ToolEnvironment,
  actor: Actor,
  runId: string,
  request: AgentRequest,
  modelName: string,
  now: Date,
): Promise<AgentRunView | undefined> {
  if (await insertRun(env, actor, runId, request, modelName, now)) return undefined;
  const deadline = Date.now() + env.config.agent.timeoutMs + 5000;
  for (;;) {
    const existing = await getAgentRunByIdempotencyKey(env.db, actor, request.idempotencyKey!);
    if (existing.instruction !== request.instruction || existing.dry_run !== request.dryRun) {
      throw new AppError('idempotency_conflict', 'This idempotency_key was first used with a different instruction.', {
        param: 'idempotency_key',
      });
    }
    if (existing.status !== 'running') return loadRunView(env, actor, existing.id);
    if (await closeInterruptedRun(env, existing, await turnStartedAt(env, existing)))
      return loadRunView(env, actor, existing.id);
    if (Date.now() > deadline)
      throw new AppError('conflict', 'A run with this idempotency_key is still in progress; retry shortly.');
    await delay(100);
  }
}

/** When the run's current turn began: its latest answer, or its creation (a run never answered). */
async function turnStartedAt(env: ToolEnvironment, run: AgentRunRow): Promise<Date> {
  return (await lastAnswerAt(env.db, run.id)) ?? run.created_at;
}

/** How long past its time budget a run may still be `running` before it counts as interrupted. */
const INTERRUPTED_AFTER_MS = 60_000;

/**
 * A run still `running` well past its time budget was interrupted: the process running it stopped
 * before recording its end. It is closed as failed (once, compare-and-set, with its run.finished
 * entry in the action log) so that a retry with its idempotency_key gets an answer instead of
 * "in progress" forever. It is not run again: actions it took before stopping are recorded and
 * stand, and running the instruction a second time could repeat them. `since`: when the turn
 * began (the run's creation, or the answer that continued it).
 */
async function closeInterruptedRun(
  env: ToolEnvironment,
  run: AgentRunRow,
  since: Date = run.created_at,
): Promise<boolean> {
  if (env.clock.now().getTime() - since.getTime() <= env.config.agent.timeoutMs + INTERRUPTED_AFTER_MS) {
    return false;
  }
  const actionIds = await listRunActionIds(env.db, run.id, 'unordered');
  return finishRun(env, run, {
    status: 'failed',
    reply:
      'This run was interrupted: the service stopped before it finished. Actions already recorded stand; see them below. Send the instruction again with a new idempotency_key to continue.',
    steps: run.steps,
    usage: null,
    actionIds,
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
  /** The run asks back (status needs_input): its reply is the question, kept as turn `seq`. */
  question?: { proposed: readonly ProposedCall[]; answerBy: Date; seq: number };
  /** The status the run must still have for this end to be recorded; default `running`. */
  from?: AgentRunStatus;
}

/**
 * Records the end of a run's turn, once: its row (only while it still has the status `from`,
 * `running` by default) and its run.finished entry in the action log, in one transaction; a run
 * that asks back records its question as the next turn of the conversation there too. Each turn
 * of a conversation ends with its own run.finished entry (the newest is the run's state). False
 * when the run had already ended.
 */
async function finishRun(env: ToolEnvironment, run: RunIdentity, outcome: RunOutcome): Promise<boolean> {
  const at = env.clock.now();
  const { question } = outcome;
  const recorded = await env.db.transaction().execute(async (trx) => {
    await lockAccountActions(trx, run.account_id);
    const ended = await endAgentRun(trx, run.id, outcome.from ?? 'running', {
      status: outcome.status,
      reply: outcome.reply,
      steps: outcome.steps,
      usage: outcome.usage ? JSON.stringify(outcome.usage) : null,
      finished_at: at,
      answer_by: question?.answerBy ?? null,
    });
    if (!ended) return false;
    if (question !== undefined) {
      await insertRunMessage(trx, {
        run_id: run.id,
        seq: question.seq,
        account_id: run.account_id,
        livemode: run.livemode,
        role: 'agent',
        text: outcome.reply,
        proposed: JSON.stringify(question.proposed),
        idempotency_key: null,
        created_at: at,
      });
    }
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
        ...(question !== undefined
          ? { question: { proposed: question.proposed, answer_by: question.answerBy.toISOString() } }
          : {}),
      },
      at,
    });
    return true;
  });
  if (recorded) recordAgentRunFinished(outcome.status);
  return recorded;
}

export async function loadRunView(
  env: ToolEnvironment,
  scope: { accountId: string; livemode: boolean },
  runId: string,
): Promise<AgentRunView> {
  let run = await findAgentRun(env.db, scope, runId);
  if (!run) throw new AppError('not_found', `No such agent run: '${runId}'.`, { param: 'id' });
  if (await expireUnanswered(env, run)) run = (await findAgentRun(env.db, scope, runId)) ?? run;
  const actions = await listRunActions(env.db, runId);
  const confirmationIds = actions.map((a) => a.confirmation_id).filter((id): id is string => id !== null);
  const confirmations = confirmationIds.length === 0 ? [] : await listConfirmationsById(env.db, confirmationIds);
  const { conversation, question } = presentConversation(run, await listRunMessages(env.db, runId));
  return { ...presentRun(env, run, actions, confirmations), conversation, question };
}

/** The run without its conversation (the lists show runs in brief). */
export function presentRun(
  env: ToolEnvironment,
  run: AgentRunRow,
  actions: readonly AgentActionRow[],
  confirmations: readonly { id: string; summary: string; expires_at: Date }[],
): Omit<AgentRunView, 'conversation' | 'question'> {
  return {
    id: run.id,
    object: 'agent_run',
    run_id: run.id,
    status: run.status === 'running' ? 'failed' : run.status,
    reply: run.reply,
    model: run.model,
    dry_run: run.dry_run,
    instruction: run.instruction,
    actions: actions.map(presentAction),
    confirmations: confirmations.map((c) => ({
      id: c.id,
      object: 'confirmation' as const,
      summary: c.summary,
      approve_url: approveUrl(env.config, c.id),
      expires_at: c.expires_at.toISOString(),
    })),
    usage: (run.usage as ModelUsage | null) ?? null,
    created: run.created_at.toISOString(),
  };
}

export function presentAction(row: AgentActionRow): AgentActionView {
  return {
    id: row.id,
    object: 'agent_action',
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

function presentConversation(
  run: AgentRunRow,
  messages: readonly AgentRunMessageRow[],
): Pick<AgentRunView, 'conversation' | 'question'> {
  const conversation = [
    { role: 'merchant' as const, text: run.instruction, created: run.created_at.toISOString() },
    ...messages.map((m) => ({ role: m.role, text: m.text, created: m.created_at.toISOString() })),
  ];
  const asked = messages.at(-1);
  const question =
    run.status === 'needs_input' && asked?.role === 'agent' && run.answer_by !== null
      ? {
          text: asked.text,
          proposed_actions: (asked.proposed as ProposedCall[] | null) ?? [],
          answer_by: run.answer_by.toISOString(),
        }
      : null;
  return { conversation, question };
}

// ---------------------------------------------------------------------------------------------------
// The conversation (docs/agent.md, "The conversation"): the merchant answers a waiting run.

/**
 * The merchant's answer to a run that asked back (POST /agent/runs/:id/reply, the MCP reply tool).
 * The answer is claimed once (compare-and-set from `needs_input`, with its run.reply entry in the
 * action log), so a second answer, or a replay of this one, never runs anything again: a replay
 * with the same idempotency key returns the run, another answer to a run no longer waiting is 409.
 * Then: "no" cancels; "yes" runs the proposed calls as shown; a new amount runs them with it; any
 * other answer goes to the model with the whole conversation. Grounding and policy judge whatever
 * runs as they judge a first message, and only the merchant's words ground it.
 */
export async function replyToRun(
  env: ToolEnvironment,
  model: AgentModel,
  tools: readonly AnyTool[],
  actor: Actor,
  runId: string,
  answer: AgentReplyRequest,
): Promise<AgentRunView> {
  const found = await findAgentRun(env.db, actor, runId);
  if (!found) throw new AppError('not_found', `No such agent run: '${runId}'.`, { param: 'id' });
  if (answer.idempotencyKey !== undefined) {
    const replayed = await replayedAnswer(env, actor, found.id, answer);
    if (replayed) return replayed;
  }
  await expireUnanswered(env, found);
  const now = env.clock.now();
  const claimed = await claimAnswer(env, found, answer, now);
  if (claimed === undefined) {
    if (answer.idempotencyKey !== undefined) {
      const replayed = await replayedAnswer(env, actor, found.id, answer);
      if (replayed) return replayed;
    }
    const current = (await findAgentRun(env.db, actor, runId)) ?? found;
    throw new AppError(
      'conflict',
      `Run '${runId}' is not waiting for an answer (status ${current.status}): only a run with status needs_input takes a reply.`,
      { param: 'id' },
    );
  }
  await continueWithAnswer(env, model, tools, actor, found, { ...answer, seq: claimed.seq, now });
  return loadRunView(env, actor, runId);
}

/** The turn after a claimed answer: cancel, run what the merchant confirmed, or the model again. */
async function continueWithAnswer(
  env: ToolEnvironment,
  model: AgentModel,
  tools: readonly AnyTool[],
  actor: Actor,
  found: AgentRunRow,
  answer: { message: string; seq: number; now: Date },
): Promise<void> {
  const { now } = answer;
  const run: RunIdentity = found;
  const usable = tools.filter((tool) => actor.scopes.has(tool.scope));
  const messages = await listRunMessages(env.db, run.id);
  const turns: ConversationTurn[] = [
    { role: 'merchant', text: run.instruction },
    ...messages.map((m) => ({ role: m.role, text: m.text })),
  ];
  const asked = messages.filter((m) => m.role === 'agent').at(-1);
  const proposed = (asked?.proposed as ProposedCall[] | null) ?? [];
  const before = { steps: found.steps, usage: (found.usage as ModelUsage | null) ?? null, nextSeq: answer.seq + 1 };
  const reading = readReply(answer.message, now);

  if (reading.kind === 'cancel') {
    await finishRun(env, run, {
      status: 'cancelled',
      reply: `Cancelled at your answer ("${oneLine(answer.message)}"): nothing was done.`,
      steps: before.steps,
      usage: before.usage,
      actionIds: await listRunActionIds(env.db, run.id, 'recorded'),
      promptVersion: systemPrompt().version,
    });
    return;
  }

  const confirmed =
    reading.kind === 'affirm' && proposed.length > 0
      ? proposed
      : reading.kind === 'amount'
        ? withNewAmount(proposed, reading)
        : undefined;
  if (confirmed !== undefined) {
    // The merchant answered the question itself, about the calls shown: what the question was about
    // (a condition, an unclear figure in the instruction) is settled by that answer, which holds
    // nothing back itself (readReply takes only a word of its lists, or one exact amount among
    // words that do not change it). Every value must still be the merchant's own or read.
    const evidence = await conversationEvidence(env, usable, run.id, merchantText(turns), now);
    const call = newRunCall(env, usable, actor, run, { ...evidence, holds: [] });
    await endTurn(call, run, await proposedTurn(call, confirmed), before);
  } else {
    // The model and grounding read the same instruction: the one the conversation comes to.
    const instruction = conversationInstruction(turns, now);
    const evidence = await conversationEvidence(env, usable, run.id, instruction, now);
    const call = newRunCall(env, usable, actor, run, evidence);
    const turn = await modelTurn(call, model, { instruction, now, conversation: turns });
    await endTurn(call, run, turn, before);
  }
}

/** The earlier answer sent with this idempotency key: the run as it is (after waiting for its turn), or 409. */
async function replayedAnswer(
  env: ToolEnvironment,
  actor: Actor,
  runId: string,
  answer: AgentReplyRequest,
): Promise<AgentRunView | undefined> {
  const earlier = await findAnswerByIdempotencyKey(env.db, runId, answer.idempotencyKey!);
  if (!earlier) return undefined;
  if (earlier.text !== answer.message) {
    throw new AppError('idempotency_conflict', 'This Idempotency-Key was first used with a different message.', {
      param: 'idempotency_key',
    });
  }
  const deadline = Date.now() + env.config.agent.timeoutMs + 5000;
  for (;;) {
    const run = await findAgentRun(env.db, actor, runId);
    if (run && run.status !== 'running') return loadRunView(env, actor, runId);
    if (run && (await closeInterruptedRun(env, run, await turnStartedAt(env, run))))
      return loadRunView(env, actor, runId);
    if (Date.now() > deadline)
      throw new AppError(
        'conflict',
        'The answer sent with this Idempotency-Key is still being worked on; retry shortly.',
      );
    await delay(100);
  }
}

/**
 * Takes the answer, once: the run goes from needs_input back to running (only before it lapses),
 * the answer becomes the next turn, and the action log records it (run.reply), in one transaction.
 * Undefined when the run was not waiting (answered already, ended, lapsed).
 */
async function claimAnswer(
  env: ToolEnvironment,
  run: AgentRunRow,
  answer: AgentReplyRequest,
  now: Date,
): Promise<{ seq: number } | undefined> {
  return env.db.transaction().execute(async (trx) => {
    await lockAccountActions(trx, run.account_id);
    if (!(await resumeAnsweredRun(trx, run.id, now))) return undefined;
    const seq = (await lastMessageSeq(trx, run.id)) + 1;
    await insertRunMessage(trx, {
      run_id: run.id,
      seq,
      account_id: run.account_id,
      livemode: run.livemode,
      role: 'merchant',
      text: answer.message,
      proposed: null,
      idempotency_key: answer.idempotencyKey ?? null,
      created_at: now,
    });
    await appendActionLog(trx, {
      accountId: run.account_id,
      livemode: run.livemode,
      entryType: 'run.reply',
      runId: run.id,
      payload: { message: answer.message, seq, idempotency_key: answer.idempotencyKey ?? null },
      at: now,
    });
    return { seq };
  });
}

/**
 * What grounds the continued run: the merchant's words (never the agent's questions), read as one
 * instruction, and the typed results of the reads the run made in earlier turns.
 */
async function conversationEvidence(
  env: ToolEnvironment,
  tools: readonly AnyTool[],
  runId: string,
  instruction: string,
  now: Date,
): Promise<RunEvidence> {
  let evidence = evidenceFromInstruction(instruction, now);
  const reads = await listExecutedRunResults(env.db, runId);
  for (const read of reads) {
    if (effectOf(tools, read.tool) === 'read') evidence = withToolResult(evidence, read.result);
  }
  return evidence;
}

/**
 * Runs the calls the merchant confirmed, in order, as the offline planner runs a plan: money calls
 * declared first (policy judges their total), each through the pipeline, stopping after a failure.
 */
async function proposedTurn(call: RunCall, calls: readonly ProposedCall[]): Promise<TurnResult> {
  call.runPlan = declaredCalls(
    call.tools,
    calls.map((c) => ({ name: c.tool, input: c.input })),
  ).filter((declared) => declared.tool.effect === 'money');
  let steps = 0;
  let reply = 'Done as proposed, at your answer.';
  for (const [index, proposed] of calls.entries()) {
    steps += 1;
    const outcome = await callThroughPipeline(call, proposed.tool, proposed.input);
    if (outcome.status === 'error' && index < calls.length - 1) {
      reply = `Stopped after a failure; the proposed actions after it were not run.`;
      break;
    }
  }
  return { status: 'completed', reply, steps, usage: undefined, incomplete: undefined, question: undefined };
}

/**
 * A run whose question lapsed unanswered ends `expired`, once, with its run.finished entry;
 * nothing moved while it waited and nothing does now. Called wherever a run is read or answered,
 * and for an account's list. True when this call expired it.
 */
async function expireUnanswered(env: ToolEnvironment, run: AgentRunRow): Promise<boolean> {
  if (run.status !== 'needs_input' || run.answer_by === null) return false;
  if (run.answer_by.getTime() > env.clock.now().getTime()) return false;
  return finishRun(env, run, {
    status: 'expired',
    reply: `${run.reply}\n\nNobody answered by ${run.answer_by.toISOString()}: the run expired and nothing was done. Send the instruction again to act on it.`,
    steps: run.steps,
    usage: (run.usage as ModelUsage | null) ?? null,
    actionIds: await listRunActionIds(env.db, run.id, 'recorded'),
    promptVersion: null,
    from: 'needs_input',
  });
}

/** Expires the account's runs whose questions lapsed unanswered (before a list shows them). */
export async function expireUnansweredRuns(
  env: ToolEnvironment,
  scope: { accountId: string; livemode: boolean },
): Promise<void> {
  const lapsed = await listLapsedQuestionRuns(env.db, scope, env.clock.now());
  for (const run of lapsed) await expireUnanswered(env, run);
}
