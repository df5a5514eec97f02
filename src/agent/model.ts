import type { AnyTool } from '../core/tool.ts';

/**
 * What the agent runtime asks of a model: turn one instruction into tool calls, calling them
 * one at a time through `callTool` (which runs the real pipeline: validation, scopes, policy,
 * idempotency, action log), and finish with a reply for the user. Two implementations: the
 * offline planner (deterministic grammar) and Claude (tool-use loop).
 */
export interface AgentModel {
  /** Recorded in the action log, e.g. "offline-planner/1" or "claude-sonnet-4-5". */
  readonly name: string;
  run(request: AgentModelRequest): Promise<AgentModelResult>;
}

export interface AgentModelRequest {
  instruction: string;
  /** The tools this caller may use (already filtered by the key's scopes). */
  tools: readonly AnyTool[];
  callTool(name: string, input: unknown): Promise<ToolCallOutcome>;
  /** Aborted when the run's step or time budget is spent. */
  signal: AbortSignal;
}

export type ToolCallOutcome =
  | { status: 'ok'; output: unknown }
  /** Policy held the action for a human: nothing moved. */
  | {
      status: 'confirmation_required';
      confirmation: { id: string; summary: string; approve_url: string; expires_at: string };
    }
  /** Validation, permission, policy deny, insufficient funds, not found, …: nothing moved. */
  | { status: 'error'; error: { type: string; code?: string; message: string; param?: string } };

export interface AgentModelResult {
  reply: string;
  /** False when the model could not make sense of the instruction and did nothing. */
  understood: boolean;
  usage?: ModelUsage;
}

export interface ModelUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}
