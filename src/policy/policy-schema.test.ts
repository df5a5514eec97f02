import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { AppError } from '../core/errors.ts';
import {
  DEFAULT_POLICY,
  limitsFor,
  MAX_POLICY_ADDRESSES,
  type PolicyJson,
  PolicySchema,
  parsePolicy,
  policyToJson,
} from './policy-schema.ts';
import { CHECKSUMMED_ADDRESS, KNOWN_ADDRESS } from './testing.ts';

function body(): PolicyJson {
  return policyToJson(DEFAULT_POLICY);
}

function parseError(raw: unknown, options?: Parameters<typeof parsePolicy>[1]): AppError {
  try {
    parsePolicy(raw, options);
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('expected parsePolicy to throw');
}

describe('DEFAULT_POLICY', () => {
  it('holds the issue defaults', () => {
    expect(policyToJson(DEFAULT_POLICY)).toEqual({
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
    });
  });

  it('is deeply frozen, so no caller can loosen every account at once', () => {
    expect(Object.isFrozen(DEFAULT_POLICY)).toBe(true);
    expect(Object.isFrozen(DEFAULT_POLICY.channels.agent)).toBe(true);
    expect(Object.isFrozen(DEFAULT_POLICY.recipients.denylist)).toBe(true);
  });
});

describe('parsePolicy', () => {
  it('accepts what policyToJson produces (GET, edit, PUT back)', () => {
    const edited = body();
    edited.channels.agent.confirm_above = 250.75;
    edited.recipients.allowlist = [KNOWN_ADDRESS, CHECKSUMMED_ADDRESS];
    edited.recipients.denylist = ['0x3333333333333333333333333333333333333333'];
    edited.tools.disabled = ['split_revenue'];
    const parsed = parsePolicy(JSON.parse(JSON.stringify(edited)));
    expect(policyToJson(parsed)).toEqual(edited);
  });

  it('returns a fresh object: editing the JSON does not touch the policy', () => {
    const json = policyToJson(DEFAULT_POLICY);
    json.tools.disabled.push('create_payout');
    expect(DEFAULT_POLICY.tools.disabled).toEqual([]);
  });

  it('requires every field, naming the missing one', () => {
    const raw = body() as unknown as { channels: { agent: Record<string, unknown> } };
    delete raw.channels.agent.daily_cap;
    const error = parseError(raw);
    expect(error.code).toBe('invalid_request');
    expect(error.param).toBe('channels.agent.daily_cap');
    expect(error.message).toBe('Missing required parameter: channels.agent.daily_cap.');
  });

  it('takes an amount as a JSON number, as every amount is written, and still the old decimal string', () => {
    const raw = body() as unknown as { channels: { mcp: Record<string, unknown>; api: Record<string, unknown> } };
    raw.channels.mcp.deny_above = 50000.5;
    raw.channels.api.deny_above = '1000.50';
    const policy = parsePolicy(raw);
    expect(policy.channels.mcp.deny_above).toBe('50000.5');
    expect(policy.channels.api.deny_above).toBe('1000.50');
    expect(policyToJson(policy).channels.api.deny_above).toBe(1000.5);
  });

  it('refuses an amount that is not a plain non-negative number, saying what to send', () => {
    const raw = body() as unknown as { channels: { mcp: Record<string, unknown> } };
    raw.channels.mcp.deny_above = true;
    const error = parseError(raw);
    expect(error.param).toBe('channels.mcp.deny_above');
    expect(error.message).toMatch(/^Invalid channels\.mcp\.deny_above: must be a number of USDC/);
  });

  it.each(['1000.1234567', '-5', '1e6', '1,000', '', 1000.1234567, -5, '123456789012345.123456'])(
    'refuses the amount %j',
    (amount) => {
      const raw = body() as unknown as { channels: { api: Record<string, unknown> } };
      raw.channels.api.deny_above = amount;
      const error = parseError(raw);
      expect(error.param).toBe('channels.api.deny_above');
      expect(error.message).toContain('at most 6 decimal places');
    },
  );

  it('refuses a version (the store numbers policies) and any other unknown field', () => {
    expect(parseError({ ...body(), version: 3 }).message).toBe('Received unknown parameter: version.');
    const raw = body() as unknown as { channels: { agent: Record<string, unknown> } };
    raw.channels.agent.confirm_above_usd = '5';
    expect(parseError(raw).param).toBe('channels.agent.confirm_above_usd');
  });

  it('requires the three policy channels and no system channel', () => {
    const raw = body() as unknown as { channels: Record<string, unknown> };
    raw.channels.system = raw.channels.api;
    expect(parseError(raw).param).toBe('channels.system');
    delete raw.channels.system;
    delete raw.channels.mcp;
    expect(parseError(raw).param).toBe('channels.mcp');
  });

  it('refuses a flag that is not a boolean', () => {
    const raw = body() as unknown as { channels: { agent: Record<string, unknown> } };
    raw.channels.agent.confirm_first_payout_to_new_recipient = 'yes';
    expect(parseError(raw).message).toBe(
      'Invalid channels.agent.confirm_first_payout_to_new_recipient: must be true or false.',
    );
  });

  it('refuses a malformed address and names its index', () => {
    const raw = body();
    raw.recipients.denylist = [KNOWN_ADDRESS, '0x123'];
    const error = parseError(raw);
    expect(error.param).toBe('recipients.denylist[1]');
    expect(error.message).toContain('0x EVM address');
  });

  it('refuses the same address twice, whatever its letter case', () => {
    const raw = body();
    raw.recipients.allowlist = [CHECKSUMMED_ADDRESS, CHECKSUMMED_ADDRESS.toLowerCase()];
    const error = parseError(raw);
    expect(error.param).toBe('recipients.allowlist[1]');
    expect(error.message).toContain('more than once');
  });

  it('bounds the lists', () => {
    const raw = body();
    raw.recipients.denylist = Array.from(
      { length: MAX_POLICY_ADDRESSES + 1 },
      (_, i) => `0x${i.toString(16).padStart(40, '0')}`,
    );
    expect(parseError(raw).param).toBe('recipients.denylist');
  });

  it('checks disabled tool names against the registry when given one', () => {
    const raw = body();
    raw.tools.disabled = ['create_payouts'];
    expect(parsePolicy(raw).tools.disabled).toEqual(['create_payouts']);
    const error = parseError(raw, { knownTools: ['create_payout', 'refund_payment'] });
    expect(error.param).toBe('tools.disabled[0]');
    expect(error.message).toBe(
      'Invalid tools.disabled[0]: create_payouts is not a tool; known tools are create_payout, refund_payment.',
    );
    raw.tools.disabled = ['Create Payout'];
    expect(parseError(raw).message).toContain('snake_case');
  });

  it('refuses a body that is not an object', () => {
    for (const raw of [undefined, null, 5, 'policy', []]) {
      expect(parseError(raw).message).toBe('The request body must be a JSON object holding the whole policy.');
    }
  });
});

describe('PolicySchema documentation', () => {
  it('describes every field (the schema feeds OpenAPI)', () => {
    const undocumented: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (typeof node !== 'object' || node === null) return;
      const schema = node as { description?: string; properties?: Record<string, unknown> };
      if (schema.properties) {
        for (const [key, child] of Object.entries(schema.properties)) {
          const childSchema = child as { description?: string };
          if (!childSchema.description) undocumented.push(`${path}${key}`);
          walk(child, `${path}${key}.`);
        }
      }
    };
    const json = z.toJSONSchema(PolicySchema, { io: 'input' });
    expect((json as { description?: string }).description).toBeTruthy();
    walk(json, '');
    expect(undocumented).toEqual([]);
  });
});

describe('limitsFor', () => {
  it('gives the channel limits and throws for the system channel', () => {
    expect(limitsFor(DEFAULT_POLICY, 'agent').confirm_above).toBe('1000');
    expect(() => limitsFor(DEFAULT_POLICY, 'system')).toThrow(/system channel/);
  });
});
