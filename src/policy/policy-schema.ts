// The account's policy as data (docs/policy.md). This schema is the one definition: it validates
// PUT /v1/policy, documents the fields (every one is described, and the same text reaches OpenAPI),
// and types what the rules read. The stored form and the JSON form are the same shape, so a policy
// read with GET can be edited and sent back with PUT unchanged.
//
// Not here on purpose: a `version`. The store numbers each saved policy; a body that carries one is
// refused as an unknown parameter, so nobody believes they can choose it.
//
// The `system` channel (the service's own workers, e.g. settlement) has no entry: it is not
// policy-checked, because it only carries out what a policy-checked action, or the service itself,
// already committed to. See evaluatePolicy.

import { normaliseRecipient } from '../domain/recipients.ts';
import { z } from 'zod';
import { AppError } from '../core/errors.ts';
import type { Channel } from '../core/tool.ts';
import { zodIssueToAppError } from '../core/validation.ts';
import { SETTLEMENT_CURRENCY } from '../domain/money.ts';
import { limitAmount, limitAmountNumber } from './amounts.ts';

/** The channels a policy governs. `system` is deliberately absent (see the file comment). */
export const POLICY_CHANNELS = Object.freeze(['api', 'agent', 'mcp'] as const);

export type PolicyChannel = (typeof POLICY_CHANNELS)[number];

/** Bounds that keep one PUT body small; a longer list belongs in a different product. */
export const MAX_POLICY_ADDRESSES = 1000;
export const MAX_DISABLED_TOOLS = 100;

const ADDRESS_PATTERN = /^0x[0-9a-fA-F]{40}$/;
const TOOL_NAME_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;
const SETTLEMENT = SETTLEMENT_CURRENCY.code;

/** A list in which the same entry twice is a mistake worth pointing at, not silently merging. */
function uniqueList<T extends z.ZodType<string>>(item: T, key: (value: string) => string, max: number, what: string) {
  return z
    .array(item)
    .max(max, `must list at most ${max} ${what}`)
    .superRefine((values, ctx) => {
      const seen = new Set<string>();
      values.forEach((value, index) => {
        const k = key(value);
        if (seen.has(k)) ctx.addIssue({ code: 'custom', path: [index], message: `lists ${value} more than once` });
        seen.add(k);
      });
    });
}

const AddressSchema = z
  .string({ error: 'must be a 0x EVM address (0x and 40 hex characters)' })
  .regex(ADDRESS_PATTERN, 'must be a 0x EVM address (0x and 40 hex characters)')
  .describe('A recipient address: 0x and 40 hex characters, any letter case');

const ToolNameSchema = z
  .string({ error: 'must be a tool name in snake_case, e.g. "create_payout"' })
  .regex(TOOL_NAME_PATTERN, 'must be a tool name in snake_case, e.g. "create_payout"')
  .describe('A tool name, e.g. "create_payout"');

/**
 * One shape, two forms of its amounts: what PUT takes (limitAmount: a JSON number, or the old
 * decimal string, stored as that string) and what GET shows (a JSON number in major units).
 */
const channelLimits = <A extends z.ZodType>(amount: (description: string) => A) =>
  z
    .strictObject({
      confirm_above: amount(
        `Hold a money action for human confirmation when its amount, converted to ${SETTLEMENT}, is above this; inside an agent run, when the run's money actions together are. null: never hold for size.`,
      ),
      deny_above: amount(
        `Refuse a money action whose amount, converted to ${SETTLEMENT}, is above this. null: no per-action ceiling.`,
      ),
      daily_cap: amount(
        `Refuse a money action that would take this channel's allowed money actions in the rolling last 24 hours above this total, in ${SETTLEMENT}. null: no cap.`,
      ),
      confirm_first_payout_to_new_recipient: z
        .boolean({ error: 'must be true or false' })
        .describe(
          'Hold a money action for human confirmation when it pays an address this account has never paid before',
        ),
    })
    .describe(`Limits for one channel. Amounts are JSON numbers of ${SETTLEMENT} in major units, e.g. 1000.5.`);

const policyShape = <L extends z.ZodType>(limits: L) =>
  z
    .strictObject({
      channels: z
        .strictObject({
          api: limits.describe('Calls made directly with an API key (REST)'),
          agent: limits.describe('Actions taken by the plainpay agent (POST /agent/settle)'),
          mcp: limits.describe('Actions taken by an outside model through the MCP server'),
        })
        .describe('Limits per channel, i.e. per way the action arrived; every channel must be given'),
      recipients: z
        .strictObject({
          allowlist: uniqueList(AddressSchema, normaliseRecipient, MAX_POLICY_ADDRESSES, 'addresses')
            .nullable()
            .describe('If a list, money may only go to these addresses (on every channel). null: any address.'),
          denylist: uniqueList(AddressSchema, normaliseRecipient, MAX_POLICY_ADDRESSES, 'addresses').describe(
            'Money never goes to these addresses, on any channel; wins over the allowlist',
          ),
        })
        .describe('Which addresses money may be sent to; compared case-insensitively'),
      tools: z
        .strictObject({
          disabled: uniqueList(ToolNameSchema, (name) => name, MAX_DISABLED_TOOLS, 'tools').describe(
            'Tools refused on every channel, whatever their effect (a disabled read tool is refused too)',
          ),
        })
        .describe('Per-tool switches'),
    })
    .describe(
      `An account's policy: the limits every money action is checked against before it runs. Amounts are in ${SETTLEMENT}, converted at the locked or current rate.`,
    );

export const ChannelLimitsSchema = channelLimits(limitAmount);

/** What PUT /v1/policy takes, and how a policy is stored (amounts as canonical decimal strings). */
export const PolicySchema = policyShape(ChannelLimitsSchema);

/** The policy as GET /v1/policy shows it: the same shape, amounts as JSON numbers in major units. */
export const PolicyViewSchema = policyShape(
  channelLimits((description) => z.number().nullable().describe(description)),
);

/** A validated policy, as stored and as the rules read it. */
export type Policy = z.output<typeof PolicySchema>;
export type ChannelLimits = z.output<typeof ChannelLimitsSchema>;
/** The JSON form for GET and PUT bodies: the same shape, field for field, amounts as numbers. */
export type PolicyJson = z.output<typeof PolicyViewSchema>;

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/**
 * The policy of an account that never saved one (the issue's defaults): the agent and MCP
 * channels hold anything above 1,000 USDC and any first payout to a new address, refuse anything
 * above 50,000 and cap themselves at 10,000 per 24 h; the API channel, driven by the merchant's
 * own code, only refuses single actions above 1,000,000. Parsed at load so the defaults can never
 * drift out of the schema.
 */
export const DEFAULT_POLICY: Policy = deepFreeze(
  PolicySchema.parse({
    channels: {
      api: {
        confirm_above: null,
        deny_above: 1000000,
        daily_cap: null,
        confirm_first_payout_to_new_recipient: false,
      },
      agent: {
        confirm_above: 1000,
        deny_above: 50000,
        daily_cap: 10000,
        confirm_first_payout_to_new_recipient: true,
      },
      mcp: {
        confirm_above: 1000,
        deny_above: 50000,
        daily_cap: 10000,
        confirm_first_payout_to_new_recipient: true,
      },
    },
    recipients: { allowlist: null, denylist: [] },
    tools: { disabled: [] },
  } satisfies PolicyJson),
);

export interface ParsePolicyOptions {
  /**
   * Names of the tools that exist. When given, `tools.disabled` may only name these: a typo such as
   * "create_payouts" would otherwise disable nothing while the owner believes it is off.
   */
  knownTools?: Iterable<string>;
}

/**
 * Validates a PUT /v1/policy body (or a stored policy) into a Policy. Throws an `invalid_request`
 * AppError naming the field, e.g. "Invalid channels.agent.daily_cap: must be a decimal string…".
 * Every field is required: PUT replaces the whole policy, and a field silently falling back to a
 * default would be a limit nobody chose.
 */
export function parsePolicy(raw: unknown, options: ParsePolicyOptions = {}): Policy {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new AppError('invalid_request', 'The request body must be a JSON object holding the whole policy.');
  }
  // reportInput lets the error mapping tell a missing field from one of the wrong type.
  const result = PolicySchema.safeParse(raw, { reportInput: true });
  if (!result.success) throw zodIssueToAppError(result.error.issues[0]!);
  const policy = result.data;

  if (options.knownTools !== undefined) {
    const known = new Set(options.knownTools);
    policy.tools.disabled.forEach((name, index) => {
      if (!known.has(name)) {
        const param = `tools.disabled[${index}]`;
        throw new AppError(
          'invalid_request',
          `Invalid ${param}: ${name} is not a tool; known tools are ${[...known].sort().join(', ')}.`,
          { param },
        );
      }
    });
  }
  return policy;
}

/** The JSON for GET /v1/policy: a fresh plain object in the schema's key order, safe to serialise. */
export function policyToJson(policy: Policy): PolicyJson {
  const limits = (channel: PolicyChannel): PolicyJson['channels'][PolicyChannel] => {
    const l = policy.channels[channel];
    return {
      confirm_above: limitAmountNumber(l.confirm_above),
      deny_above: limitAmountNumber(l.deny_above),
      daily_cap: limitAmountNumber(l.daily_cap),
      confirm_first_payout_to_new_recipient: l.confirm_first_payout_to_new_recipient,
    };
  };
  return {
    channels: { api: limits('api'), agent: limits('agent'), mcp: limits('mcp') },
    recipients: {
      allowlist: policy.recipients.allowlist === null ? null : [...policy.recipients.allowlist],
      denylist: [...policy.recipients.denylist],
    },
    tools: { disabled: [...policy.tools.disabled] },
  };
}

export function isPolicyChannel(channel: Channel | string): channel is PolicyChannel {
  return (POLICY_CHANNELS as readonly string[]).includes(channel);
}

/**
 * The limits for a policy-checked channel. Throws for anything else (`system`, or a policy object
 * that did not come through the schema): the engine turns a throw into a deny.
 */
export function limitsFor(policy: Policy, channel: Channel): ChannelLimits {
  const limits = isPolicyChannel(channel) ? policy.channels[channel] : undefined;
  if (limits === undefined) throw new Error(`the policy has no limits for the ${channel} channel`);
  return limits;
}
