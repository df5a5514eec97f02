import type { ModeScope } from '../db/database.ts';
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
