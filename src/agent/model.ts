import type { AnyTool } from '../core/tool.ts';
import type { ConversationTurn } from './conversation.ts';

/**
 * What the agent runtime asks of a model: turn one instruction into tool calls, calling them
 * one at a time through `callTool` (which runs the real pipeline: validation, scopes, policy,
 * idempotency, action log), and finish with a reply for the user. Two implementations: the
 * offline planner (deterministic grammar) and Claude (tool-use loop).
 */
export interface AgentModel {
  /** Recorded in the action log, e.g. "offline-planner/2" or "claude-sonnet-5-5". */
  readonly name: string;
  run(request: AgentModelRequest): Promise<AgentModelResult>;
}

export interface AgentModelRequest {
  /** The merchant's instruction; in a run that asked back, all the merchant's turns in order. */
  instruction: string;
  /**
   * Set when the run continues after asking back: every turn so far, the merchant's first
   * instruction first and their latest answer last (docs/agent.md, "The conversation"). A model
   * that keeps a dialogue (Claude) continues it with the answer as the next user turn.
   */
  conversation?: readonly ConversationTurn[];
  /** The tools this caller may use (already filtered by the key's scopes). */
  tools: readonly AnyTool[];
  callTool(name: string, input: unknown): Promise<ToolCallOutcome>;
  /** Aborted when the run's step or time budget is spent. */
  signal: AbortSignal;
  /** The run's clock reading: relative dates ("yesterday", "last week") resolve against it, in UTC. */
  now: Date;
  /**
   * A model that knows its whole plan before running it (the offline planner) declares its money
   * calls first, so that policy judges the run's total once: four 900 USDC payouts in one message
   * are one 3,600 USDC decision, not one allowed payout and three held ones. Optional: a model that
   * decides step by step (Claude) is judged on the run's running total instead.
   */
  declarePlan?(calls: readonly PlannedCall[]): void;
  /**
   * True when the caller restates every write and money action itself, from the action log (the
   * agent runtime does): the model's reply then need only answer reads and say what it did not do.
   */
  restatesActions?: boolean;
}

export interface PlannedCall {
  name: string;
  input: unknown;
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
  /**
   * Set when the model stopped before it finished: its output was cut at the token limit, it ran
   * out of turns, or it declined (a `refusal` stop). Such a run is never `completed`, whatever it did before.
   */
  incomplete?: { reason: 'max_tokens' | 'max_turns' | 'refusal'; message: string };
  /**
   * Set when the reply is a question for the merchant that an answer can settle (the model could
   * not act as asked). If the run moved nothing, it waits for the answer (`needs_input`). `proposed`:
   * the calls the model would make on the most likely reading, shown with the question and run only
   * if the merchant answers yes (or with a new amount); empty when no reading is most likely.
   */
  question?: { proposed: readonly PlannedCall[] };
  usage?: ModelUsage;
}

export interface ModelUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}
