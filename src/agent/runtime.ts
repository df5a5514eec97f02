import { setTimeout as delay } from 'node:timers/promises';
import { appendActionLog, lockAccountActions } from '../audit/action-log.ts';
import { AppError, toAppError } from '../core/errors.ts';
import { executeTool } from '../core/pipeline.ts';
import type { Actor, AnyTool } from '../core/tool.ts';
import type { AgentActionRow, AgentRunRow, AgentRunStatus } from '../db/tables/money.ts';
import { newId } from '../domain/ids.ts';
import type { Runtime } from '../runtime.ts';
import type { AgentModel, ModelUsage, ToolCallOutcome } from './model.ts';
import { approveUrl } from '../policy/confirmations.ts';
import { systemPrompt } from './prompts.ts';

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
  let steps = 0;
  let status: Exclude<AgentRunStatus, 'running'>;
  let reply: string;
  let usage: ModelUsage | undefined;
  try {
    const result = await model.run({
      instruction: request.instruction,
      tools: usable,
      signal: controller.signal,
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
        return callThroughPipeline(runtime, usable, actor, runId, request.dryRun, name, input);
      },
    });
    usage = result.usage;
    reply = result.reply;
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
  if (status === 'completed') status = outcomeOf(actions);
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

async function callThroughPipeline(
  runtime: Runtime,
  tools: readonly AnyTool[],
  actor: Actor,
  runId: string,
  dryRun: boolean,
  name: string,
  input: unknown,
): Promise<ToolCallOutcome> {
  const tool = tools.find((t) => t.name === name);
  if (!tool) {
    return {
      status: 'error',
      error: { type: 'invalid_request_error', message: `There is no tool '${name}' available to this key.` },
    };
  }
  try {
    const result = await executeTool(tool, input, { runtime, actor, runId, dryRun });
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
    return { status: 'ok', output: result.output };
  } catch (error) {
    const appError = toAppError(error);
    const body = appError.toBody().error;
    return { status: 'error', error: body };
  }
}

/** A run that made calls: held if any call is held, failed if any failed or was denied. */
function outcomeOf(actions: readonly AgentActionRow[]): Exclude<AgentRunStatus, 'running'> {
  if (actions.some((a) => a.status === 'failed')) return 'failed';
  if (actions.some((a) => a.status === 'denied')) return 'rejected';
  if (actions.some((a) => a.status === 'held')) return 'confirmation_required';
  return 'completed';
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
  return runtime.db.transaction().execute(async (trx) => {
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
}

export async function loadRunView(
  runtime: Runtime,
  scope: { accountId: string; livemode: boolean },
  runId: string,
): Promise<AgentRunView> {
  const run = await runtime.db
    .selectFrom('agent_runs')
    .selectAll()
    .where('id', '=', runId)
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .executeTakeFirst();
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
