import type { Compilable, OperationNodeSource } from 'kysely';
import type { z } from 'zod';
import type { Db } from '../db/database.ts';
import type { ErrorCode } from './errors.ts';
import type { ApiKeyScope } from '../domain/api-key-secret.ts';
import type { Runtime } from '../runtime.ts';

/**
 * A tool is the one definition of an operation (DESIGN.md §4). The REST routes, the agent,
 * the MCP server and the workers all run it through executeTool (pipeline.ts).
 */
export type ToolEffect = 'read' | 'write' | 'money';

/** Where a call came from; the policy engine treats channels differently. */
export type Channel = 'api' | 'agent' | 'mcp' | 'system';

export interface Actor {
  accountId: string;
  livemode: boolean;
  /** The API key that made the call (null for the service's own workers). */
  keyId: string | null;
  scopes: ReadonlySet<string>;
  channel: Channel;
}

export interface ToolContext {
  runtime: Runtime;
  /** A transaction for write and money tools (everything commits together), the database for reads. */
  db: Db;
  actor: Actor;
  now: Date;
}

export interface HttpBinding {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** fastify path; its :params are fields of the tool's input. */
  path: string;
}

/** What the policy engine judges about one money action. */
export interface PolicySubject {
  /** The amount in settlement-asset minor units (USDC 6 dp); undefined when it cannot be known (denied). */
  amountSettlementMinor: bigint | undefined;
  /** Addresses that receive money (none for a refund to the payer's rail). */
  recipients: string[];
  /** One line for humans approving it, e.g. "Pay out 5,000.000000 USDC to 0xAb…12". */
  summary: string;
}

export interface ToolDefinition<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  /** snake_case verb_noun, the name models and MCP clients call. */
  name: string;
  title: string;
  description: string;
  input: I;
  output: O;
  effect: ToolEffect;
  scope: ApiKeyScope;
  http?: HttpBinding;
  /**
   * Checks that need I/O outside the database (DNS for a webhook URL), run after validation and
   * before the transaction opens, so no database connection waits on the network.
   */
  precheck?(input: z.output<I>, ctx: Omit<ToolContext, 'db'>): Promise<void>;
  /**
   * What the policy judges, where the policy checks this tool (money tools on every channel, every
   * tool on the agent and MCP channels). Runs in the transaction, before the handler.
   */
  policy?(input: z.output<I>, ctx: ToolContext): Promise<PolicySubject>;
  handler(input: z.output<I>, ctx: ToolContext): Promise<z.output<O>>;
  /**
   * What an earlier call with the same caller-given name (a payout's `reference`) created, or
   * undefined. Runs in the transaction under the account's lock, before the policy: a repeat
   * returns the first result and is neither judged nor counted again; a repeat with other
   * parameters should throw a 409 (`conflict`). The name binds for good, not just for the
   * idempotency window.
   */
  existing?(input: z.output<I>, ctx: ToolContext): Promise<z.output<O> | undefined>;
  /**
   * A create that is one row, known in full before it is written: the pipeline then writes the
   * row, claims the idempotency key and stores the response in one statement instead of a
   * transaction (pipeline.ts). Used only where nothing else would run in that transaction (a call
   * neither judged nor logged); ctx.db is the database, not a transaction. An insert that writes
   * no row (a guard or conflict in it stopped it) falls back to the handler, which must give the
   * same result for the same row; so does undefined.
   */
  singleInsert?(input: z.output<I>, ctx: ToolContext): Promise<SingleInsert<z.output<O>> | undefined>;
  /**
   * Errors the handler raises that its shape does not imply, for the OpenAPI document (which
   * infers the rest: a path id or an `…_id` field can be not found, a money tool held or short).
   */
  errors?: readonly ErrorCode[];
}

/** See ToolDefinition.singleInsert. */
export interface SingleInsert<O, R = unknown> {
  /** insert … returning *: the row, or none when its guard or a conflict stops it. */
  insert: Compilable<R> & OperationNodeSource;
  /** The row as `insert` will return it, to compute the stored response before it is written. */
  row: R;
  /** The tool's output for a row `insert` returned. */
  output(row: R): O;
}

// biome-ignore lint/suspicious/noExplicitAny: the registry holds tools of every input/output type.
export type AnyTool = ToolDefinition<any, any>;

export function defineTool<I extends z.ZodType, O extends z.ZodType>(tool: ToolDefinition<I, O>): ToolDefinition<I, O> {
  return tool;
}
