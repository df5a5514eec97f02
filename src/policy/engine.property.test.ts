import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Channel, ToolEffect } from '../core/tool.ts';
import { CURRENCIES, formatMinor } from '../domain/money.ts';
import { type PolicyAction, type PolicyContext, type RunSpend, severity } from './action.ts';
import { optionalPolicyAmountToMinor } from './amounts.ts';
import { evaluatePolicy } from './engine.ts';
import { type ChannelLimits, type Policy, type PolicyChannel, parsePolicy, policyToJson } from './policy-schema.ts';
import { runTotal } from './rules/confirm-above.ts';

const ADDRESSES = [
  '0x1111111111111111111111111111111111111111',
  '0x2222222222222222222222222222222222222222',
  '0xabcdef0123456789abcdef0123456789abcdef01',
  '0x00000000000000000000000000000000000000ff',
  '0x9999999999999999999999999999999999999999',
];
const TOOLS = ['create_payout', 'refund_payment', 'split_revenue', 'get_payment', 'list_payments'];
const ONE_USDC = 1_000_000n;

// Amounts up to 100,000 USDC, so that generated thresholds and amounts land on both sides of each other.
const minorAmount = fc.bigInt({ min: 0n, max: 100_000n * ONE_USDC });
// A limit written either as "1234" or with all six decimals ("1234.500000"): both are valid policy text.
const amountText = fc.oneof(
  fc.bigInt({ min: 0n, max: 100_000n }).map((major) => major.toString()),
  minorAmount.map((minor) => formatMinor(minor, CURRENCIES.USDC)),
);
const limitsArb: fc.Arbitrary<ChannelLimits> = fc.record({
  confirm_above: fc.option(amountText, { nil: null }),
  deny_above: fc.option(amountText, { nil: null }),
  daily_cap: fc.option(amountText, { nil: null }),
  confirm_first_payout_to_new_recipient: fc.boolean(),
});
// Addresses appear in random letter case everywhere: the rules must compare case-insensitively.
const anyCase = (address: string): fc.Arbitrary<string> =>
  fc.boolean().map((upper) => (upper ? `0x${address.slice(2).toUpperCase()}` : address));
const addressArb = fc.constantFrom(...ADDRESSES).chain(anyCase);

const policyArb: fc.Arbitrary<Policy> = fc.record({
  channels: fc.record({ api: limitsArb, agent: limitsArb, mcp: limitsArb }),
  recipients: fc.record({
    // Lists stay short and often unset, so that enough generated actions get through to check.
    allowlist: fc.option(fc.subarray(ADDRESSES), { nil: null, freq: 2 }),
    denylist: fc.subarray(ADDRESSES, { maxLength: 2 }),
  }),
  tools: fc.record({ disabled: fc.subarray(TOOLS, { maxLength: 2 }) }),
});

const actionArb: fc.Arbitrary<PolicyAction> = fc.record({
  tool: fc.constantFrom(...TOOLS),
  effect: fc.constantFrom<ToolEffect>('read', 'write', 'money', 'money', 'money'),
  channel: fc.constantFrom<Channel>('api', 'agent', 'mcp', 'system'),
  amountSettlementMinor: fc.option(fc.oneof(fc.bigInt({ min: 0n, max: 2_000n * ONE_USDC }), minorAmount), {
    nil: undefined,
    freq: 5,
  }),
  recipients: fc.array(addressArb, { maxLength: 2 }),
});

/** Money actions on a policy-checked channel: the ones every limit applies to. */
const moneyActionArb: fc.Arbitrary<PolicyAction> = actionArb.map((action) => ({
  ...action,
  effect: 'money' as const,
  channel: action.channel === 'system' ? 'agent' : action.channel,
}));

const runArb: fc.Arbitrary<RunSpend> = fc.record({
  recordedSettlementMinor: minorAmount,
  recordedActions: fc.nat({ max: 20 }),
  declaredSettlementMinor: minorAmount,
  declaredActions: fc.nat({ max: 20 }),
});

const contextArb: fc.Arbitrary<PolicyContext> = fc.record({
  spentLast24hSettlementMinor: fc.bigInt({ min: 0n, max: 100_000n * ONE_USDC }),
  knownRecipients: fc.subarray(ADDRESSES).map((known) => new Set(known)),
  run: fc.option(runArb, { nil: null }),
});

const RUNS = { numRuns: 1000 };

function limitsOf(policy: Policy, channel: PolicyChannel): Record<'confirm' | 'deny' | 'cap', bigint | undefined> {
  const limits = policy.channels[channel];
  return {
    confirm: optionalPolicyAmountToMinor(limits.confirm_above),
    deny: optionalPolicyAmountToMinor(limits.deny_above),
    cap: optionalPolicyAmountToMinor(limits.daily_cap),
  };
}

describe('evaluatePolicy properties', () => {
  it('generated policies are valid policies (GET → PUT round trip)', () => {
    fc.assert(
      fc.property(policyArb, (policy) => {
        // GET shows amounts as numbers ("1000.50" as 1000.5): what a PUT of it stores is the same policy.
        const shown = policyToJson(policy);
        expect(policyToJson(parsePolicy(JSON.parse(JSON.stringify(shown))))).toEqual(shown);
      }),
      { numRuns: 200 },
    );
  });

  it('(a) the outcome is the most severe verdict, and reasons are listed strictest first', () => {
    fc.assert(
      fc.property(policyArb, actionArb, contextArb, fc.boolean(), (policy, action, context, satisfied) => {
        const decision = evaluatePolicy(policy, action, context, { satisfiedConfirmation: satisfied });
        const worst = decision.reasons.reduce((max, r) => Math.max(max, severity(r.outcome)), severity('allow'));
        expect(severity(decision.outcome)).toBe(worst);
        const order = decision.reasons.map((r) => severity(r.outcome));
        expect(order).toEqual([...order].sort((x, y) => y - x));
      }),
      RUNS,
    );
  });

  it('(b) a satisfied confirmation never turns a deny into anything else, and lifts only confirmations', () => {
    fc.assert(
      fc.property(policyArb, actionArb, contextArb, (policy, action, context) => {
        const held = evaluatePolicy(policy, action, context);
        const approved = evaluatePolicy(policy, action, context, { satisfiedConfirmation: true });
        const denials = (d: typeof held) => d.reasons.filter((r) => r.outcome === 'deny');
        expect(denials(approved)).toEqual(denials(held));
        expect(approved.outcome).toBe(held.outcome === 'deny' ? 'deny' : 'allow');
      }),
      RUNS,
    );
  });

  it('(c) a money action with an unknown amount is never allowed, confirmed or not', () => {
    fc.assert(
      fc.property(policyArb, actionArb, contextArb, fc.boolean(), (policy, action, context, satisfied) => {
        fc.pre(action.channel !== 'system');
        const unknown = { ...action, effect: 'money' as const, amountSettlementMinor: undefined };
        expect(evaluatePolicy(policy, unknown, context, { satisfiedConfirmation: satisfied }).outcome).toBe('deny');
      }),
      RUNS,
    );
  });

  it('(d) an allowed money action respects every limit of its channel', () => {
    let allowed = 0;
    fc.assert(
      fc.property(policyArb, moneyActionArb, contextArb, fc.boolean(), (policy, action, context, satisfied) => {
        const decision = evaluatePolicy(policy, action, context, { satisfiedConfirmation: satisfied });
        if (decision.outcome !== 'allow') return;
        allowed += 1;
        const channel = action.channel as PolicyChannel;
        const amount = action.amountSettlementMinor;
        if (amount === undefined) throw new Error('allowed without an amount');
        const { confirm, deny, cap } = limitsOf(policy, channel);
        const recipients = action.recipients.map((r) => r.toLowerCase());
        expect(policy.tools.disabled).not.toContain(action.tool);
        if (deny !== undefined) expect(amount <= deny).toBe(true);
        if (cap !== undefined) expect(context.spentLast24hSettlementMinor + amount <= cap).toBe(true);
        for (const r of recipients) expect(policy.recipients.denylist).not.toContain(r);
        const allowlist = policy.recipients.allowlist;
        if (allowlist !== null) for (const r of recipients) expect(allowlist).toContain(r);
        if (!satisfied) {
          // Without a human's approval, nothing that needs one runs.
          if (confirm !== undefined) expect(amount <= confirm).toBe(true);
          // Inside a run, the run's total as well: recorded so far plus this action, and declared.
          if (confirm !== undefined && context.run !== null) {
            expect(runTotal(amount, context.run).settlementMinor <= confirm).toBe(true);
            expect(context.run.declaredSettlementMinor <= confirm).toBe(true);
          }
          if (policy.channels[channel].confirm_first_payout_to_new_recipient) {
            for (const r of recipients) expect(context.knownRecipients.has(r)).toBe(true);
          }
        }
      }),
      RUNS,
    );
    // Guards against a vacuous property: enough generated actions must actually get through.
    expect(allowed).toBeGreaterThan(40);
  });

  it('never throws, whatever it is given', () => {
    fc.assert(
      fc.property(policyArb, actionArb, contextArb, fc.boolean(), (policy, action, context, satisfied) => {
        expect(() => evaluatePolicy(policy, action, context, { satisfiedConfirmation: satisfied })).not.toThrow();
      }),
      RUNS,
    );
  });

  it('a random sequence of requests and approvals never moves money past the policy', () => {
    // One account within one 24-hour window. A request runs when the policy allows it; a held one
    // may be approved by a human, which re-runs the policy with the confirmation satisfied. Money
    // moves only on allow. The caps and per-action ceilings must hold for the sequence as a whole.
    const step = fc.record({
      channel: fc.constantFrom<PolicyChannel>('api', 'agent', 'mcp'),
      tool: fc.constantFrom('create_payout', 'split_revenue', 'refund_payment'),
      amount: fc.option(fc.bigInt({ min: 0n, max: 20_000n * ONE_USDC }), { nil: undefined, freq: 8 }),
      recipients: fc.array(addressArb, { maxLength: 2 }),
      approve: fc.boolean(),
    });
    let moved = 0;
    fc.assert(
      fc.property(policyArb, fc.array(step, { maxLength: 30 }), (policy, steps) => {
        const spent: Record<PolicyChannel, bigint> = { api: 0n, agent: 0n, mcp: 0n };
        const known = new Set<string>();
        for (const s of steps) {
          const action: PolicyAction = {
            tool: s.tool,
            effect: 'money',
            channel: s.channel,
            amountSettlementMinor: s.amount,
            recipients: s.recipients,
          };
          const context = (): PolicyContext => ({
            spentLast24hSettlementMinor: spent[s.channel],
            knownRecipients: new Set(known),
            run: null,
          });
          let decision = evaluatePolicy(policy, action, context());
          if (decision.outcome === 'require_confirmation' && s.approve) {
            decision = evaluatePolicy(policy, action, context(), { satisfiedConfirmation: true });
          }
          if (decision.outcome !== 'allow') continue;
          // Money moves.
          moved += 1;
          if (s.amount === undefined) throw new Error('money moved without a known amount');
          spent[s.channel] += s.amount;
          for (const r of s.recipients) known.add(r.toLowerCase());
          const { deny } = limitsOf(policy, s.channel);
          if (deny !== undefined) expect(s.amount <= deny).toBe(true);
          expect(policy.tools.disabled).not.toContain(s.tool);
        }
        for (const channel of ['api', 'agent', 'mcp'] as const) {
          const { cap } = limitsOf(policy, channel);
          if (cap !== undefined) expect(spent[channel] <= cap).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
    expect(moved).toBeGreaterThan(100);
  });
  it('the actions of one run that run without a human never add up past the confirmation threshold', () => {
    // One agent run: each call is judged with what the run recorded before it (held ones count,
    // since they may still be approved, and the rule must not let the rest through meanwhile).
    // Whatever runs unconfirmed stays within confirm_above in total, however the money is split.
    const call = fc.record({
      amount: fc.bigInt({ min: 0n, max: 3_000n * ONE_USDC }),
      recipients: fc.array(addressArb, { minLength: 1, maxLength: 2 }),
    });
    let ran = 0;
    fc.assert(
      fc.property(policyArb, fc.array(call, { maxLength: 12 }), fc.boolean(), (policy, calls, declare) => {
        const declared = calls.reduce((sum, c) => sum + c.amount, 0n);
        let recorded = 0n;
        let recordedActions = 0;
        let unconfirmed = 0n;
        for (const c of calls) {
          const action: PolicyAction = {
            tool: 'create_payout',
            effect: 'money',
            channel: 'agent',
            amountSettlementMinor: c.amount,
            recipients: c.recipients,
          };
          const run: RunSpend = {
            recordedSettlementMinor: recorded,
            recordedActions,
            declaredSettlementMinor: declare ? declared : 0n,
            declaredActions: declare ? calls.length : 0,
          };
          const context: PolicyContext = { spentLast24hSettlementMinor: 0n, knownRecipients: new Set(ADDRESSES), run };
          const decision = evaluatePolicy(policy, action, context);
          if (decision.outcome === 'deny') continue;
          recorded += c.amount;
          recordedActions += 1;
          if (decision.outcome === 'allow') {
            unconfirmed += c.amount;
            ran += 1;
          }
        }
        const { confirm } = limitsOf(policy, 'agent');
        if (confirm !== undefined) expect(unconfirmed <= confirm).toBe(true);
        // A declared plan above the threshold lets nothing of it run without a human.
        if (confirm !== undefined && declare && declared > confirm) expect(unconfirmed).toBe(0n);
      }),
      { numRuns: 300 },
    );
    expect(ran).toBeGreaterThan(50);
  });
});
