import type { CompiledQuery, Kysely } from 'kysely';
import type { z } from 'zod';
import type { ChainConnection } from '../chain/chain.ts';
import type { Config } from '../config/config.ts';
import type { Database, Db, ModeScope } from '../db/database.ts';
import type { ApiKeyScope } from '../domain/api-key-secret.ts';
import type { RateTable } from '../domain/fx.ts';
import type { Clock } from './clock.ts';
import type { ErrorCode } from './errors.ts';
import type { Logger } from './logger.ts';

/**
 * A tool is the one definition of an operation (docs/architecture.md). The REST routes, the agent, the MCP
 * server, the payer's page and the workers all run it through executeTool (src/pipeline/execute-tool.ts): every
 * ledger posting and every money status change is made by a tool (docs/architecture.md).
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
  /**
   * The key is an assistant's (api_keys.assistant): its calls are judged by the mcp channel's
   * limits as well as by their own channel's, whatever transport carries them (judgingChannels).
   */
  assistant?: boolean;
}

/**
 * What a tool may use besides its transaction, and nothing more: its settings, a logger, the FX
 * rates that price a quote, and the chain (a payout's guardrails ask it who the contracts are).
 * Not the runtime: no tool reaches the rate limiter, the secret box or the notifications.
 */
export interface ToolServices {
  config: Config;
  logger: Logger;
  rates: RateTable;
  /** The chain, connected on first use. */
  chain(): Promise<ChainConnection>;
}

/** What the pipeline runs tools with: the database and the clock, and the tools' services. */
export interface ToolEnvironment extends ToolServices {
  db: Kysely<Database>;
  clock: Clock;
}

export interface ToolContext extends ToolServices {
  /** A transaction for write and money tools (everything commits together), the database for reads. */
  db: Db;
  actor: Actor;
  /** Business time of the call (the environment's clock, read once per call). */
  now: Date;
  /**
   * For a system run that names its accounts (SystemToolSpec.accounts): those whose action-log
   * locks it holds. It acts for no other account.
   */
  scopes?: readonly ModeScope[];
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
   * transaction (src/pipeline/execute-tool.ts). Used only where nothing else would run in that transaction (a call
   * neither judged nor logged); ctx.db is the database, not a transaction. An insert that writes
   * no row (a guard or conflict in it stopped it) falls back to the handler, which must give the
   * same result for the same row; so does undefined.
   */
  singleInsert?(input: z.output<I>, ctx: ToolContext): Promise<SingleInsert<z.output<O>> | undefined>;
  /**
   * Marks a system tool (tools/system/): the service's own money steps (a payment paid, settled,
   * expired; a settlement batch confirmed, failed or undone by a reorg; a test balance funded). Run
   * only on the `system` channel, by the workers, the payer's page and the test helpers; never
   * offered to REST, MCP or the agent, never judged by the policy, and every run that executes is in
   * the action log of each account it acts for.
   */
  system?: SystemToolSpec<z.output<I>, z.output<O>>;
  /**
   * Errors the handler raises that its shape does not imply, for the OpenAPI document (which
   * infers the rest: a path id or an `…_id` field can be not found, a money tool held or short).
   */
  errors?: readonly ErrorCode[];
}

/** See ToolDefinition.system. */
export interface SystemToolSpec<I, O> {
  /**
   * The accounts (and modes) a run acts for, when it acts for several at once (a settlement batch
   * carries many merchants' transfers); absent: the actor's account. Called in the run's
   * transaction before the handler. Each account's action-log lock is taken next, in account order
   * (lockActionLogs), and the handler acts for those accounts only (ToolContext.scopes).
   */
  accounts?(input: I, ctx: ToolContext): Promise<ModeScope[]>;
  /**
   * `wait` (the default): accounts() locks nothing, and the run waits for every account's
   * action-log lock before it touches a row, as every money call does. `skip`: accounts() has
   * already locked the run's rows (FOR UPDATE SKIP LOCKED), so the run must not wait for an
   * action-log lock a merchant's call holds while that call waits for one of those rows: it takes
   * only the locks that are free and leaves the other accounts' rows for its next run.
   */
  busyAccounts?: 'wait' | 'skip';
  /**
   * What one account's action-log row records of a run that acts for several: its own part of the
   * input and of the output, and of the money moved (never another merchant's ids), or undefined
   * when the run did nothing for it (no row is written then).
   */
  recordFor?(input: I, output: O, scope: ModeScope): SystemRecord | undefined;
}

/** One account's record of a many-account system run (SystemToolSpec.recordFor). */
export interface SystemRecord {
  input: unknown;
  result: unknown;
  /** What the run moved for this account, in settlement-asset minor units, as finance's views show it. */
  amountSettlementMinor?: bigint;
}

/** See ToolDefinition.singleInsert. */
export interface SingleInsert<O, R = unknown> {
  /** insert … returning *: the row, or none when its guard or a conflict stops it. */
  insert: CompiledQuery<R>;
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
