import type { Transaction } from 'kysely';
import type { Database, ModeScope } from '../db/database.ts';
import { API_KEY_SCOPES } from '../domain/api-key-secret.ts';
import { executedOutput, executeTool } from './execute-tool.ts';
import type { Actor, AnyTool, ToolEnvironment } from '../core/tool.ts';

/**
 * The service's own actor: no key, every scope, the `system` channel (never policy-checked). With a
 * scope it acts for that account and mode; without one it runs a tool that names the accounts it
 * acts for itself (ToolDefinition.system.accounts), and its own account is never read.
 */
export function systemActor(scope?: ModeScope): Actor {
  return {
    accountId: scope?.accountId ?? '',
    livemode: scope?.livemode ?? false,
    keyId: null,
    scopes: new Set(API_KEY_SCOPES),
    channel: 'system',
  };
}

/**
 * The operator at the command line (`plainpay chain adopt`): no API key and no account, so, like
 * the service, it runs system tools on the `system` channel; a step it starts by hand is its own,
 * not a worker's, and named so where it is run.
 */
export function operatorActor(): Actor {
  return systemActor();
}

/**
 * Runs a system tool (tools/system/) through the pipeline, as the workers, the payer's page and the
 * test helpers do: for one account and mode, or, without a scope, for the accounts the tool names.
 */
export async function runSystemTool<T extends AnyTool>(
  runtime: ToolEnvironment,
  tool: T,
  input: unknown,
  scope?: ModeScope,
): Promise<Awaited<ReturnType<T['handler']>>> {
  if (scope === undefined && !tool.system?.accounts) {
    throw new Error(`${tool.name} acts for one account: run it with that account's scope`);
  }
  return executedOutput(await executeTool(tool, input, { runtime, actor: systemActor(scope) }));
}

/**
 * Runs a system tool inside the caller's open transaction, where its write must commit or roll back
 * with the caller's (a batch planned on the transfers the planner locked; a batch sent with the
 * signed transaction stored before its broadcast). The tool must act for no merchant (its accounts
 * are none): its run takes no action-log lock after the caller's row locks, and is logged nowhere.
 */
export async function runSystemToolIn<T extends AnyTool>(
  trx: Transaction<Database>,
  runtime: ToolEnvironment,
  tool: T,
  input: unknown,
  actor: Actor = systemActor(),
): Promise<Awaited<ReturnType<T['handler']>>> {
  // A precheck reads through the runtime's database, outside the caller's transaction: on PGlite
  // (one connection, held by that transaction) the read would wait for ever. (A tool that is not a
  // system tool is refused by the pipeline, as anywhere off its channel.)
  if (tool.system && tool.precheck) {
    throw new Error(`${tool.name} has a precheck: it cannot run in its caller's transaction`);
  }
  return executedOutput(await executeTool(tool, input, { runtime, actor, transaction: trx }));
}
