import { describe, expect, it } from 'vitest';
import type { PolicyContext } from './action.ts';
import { evaluatePolicy, judgingChannels, strictestDecision, summarizeDecision } from './engine.ts';
import { DEFAULT_POLICY, type Policy } from './policy-schema.ts';
import { KNOWN_ADDRESS, moneyAction, NEW_ADDRESS, policyContext, usdc, withChannel } from './testing.ts';

const outcomes = (reasons: readonly { rule: string; outcome: string }[]): string[][] =>
  reasons.map((r) => [r.rule, r.outcome]);

describe('evaluatePolicy with the default policy (the issue examples)', () => {
  it('agent: 500 USDC to a known recipient runs, and every check is listed', () => {
    const decision = evaluatePolicy(DEFAULT_POLICY, moneyAction(), policyContext());
    expect(decision.outcome).toBe('allow');
    expect(outcomes(decision.reasons)).toEqual([
      ['deny_above', 'allow'],
      ['daily_cap', 'allow'],
      ['confirm_above', 'allow'],
      ['first_payout', 'allow'],
    ]);
  });

  it('agent: 5,000 USDC is held for confirmation', () => {
    const decision = evaluatePolicy(
      DEFAULT_POLICY,
      moneyAction({ amountSettlementMinor: usdc('5000') }),
      policyContext(),
    );
    expect(decision.outcome).toBe('require_confirmation');
    expect(decision.reasons[0]).toEqual({
      rule: 'confirm_above',
      outcome: 'require_confirmation',
      reason: "5,000 USDC is above the agent channel's confirmation threshold of 1,000 USDC",
    });
    expect(summarizeDecision(decision)).toBe(
      "5,000 USDC is above the agent channel's confirmation threshold of 1,000 USDC",
    );
  });

  it('agent: 60,000 USDC is denied, with every reason, strictest first', () => {
    const decision = evaluatePolicy(
      DEFAULT_POLICY,
      moneyAction({ amountSettlementMinor: usdc('60000') }),
      policyContext(),
    );
    expect(decision.outcome).toBe('deny');
    expect(outcomes(decision.reasons)).toEqual([
      ['deny_above', 'deny'],
      ['daily_cap', 'deny'],
      ['confirm_above', 'require_confirmation'],
      ['first_payout', 'allow'],
    ]);
    expect(summarizeDecision(decision)).toBe(
      "60,000 USDC is above the agent channel's limit of 50,000 USDC per action; " +
        "60,000 USDC would bring the last 24 hours to 60,000 USDC, above the agent channel's cap of 10,000 USDC per 24 hours; 10,000 USDC remains",
    );
  });

  it('a first payout to a new recipient is held on agent and mcp, and runs on api', () => {
    for (const channel of ['agent', 'mcp'] as const) {
      const decision = evaluatePolicy(
        DEFAULT_POLICY,
        moneyAction({ channel, recipients: [NEW_ADDRESS] }),
        policyContext(),
      );
      expect(decision.outcome).toBe('require_confirmation');
      expect(decision.reasons[0]?.rule).toBe('first_payout');
    }
    const api = evaluatePolicy(
      DEFAULT_POLICY,
      moneyAction({ channel: 'api', recipients: [NEW_ADDRESS] }),
      policyContext(),
    );
    expect(api.outcome).toBe('allow');
  });

  it('the agent daily cap of 10,000 USDC is rolling: a small action is refused once it is used up', () => {
    const context = policyContext({ spentLast24hSettlementMinor: usdc('9800') });
    expect(evaluatePolicy(DEFAULT_POLICY, moneyAction({ amountSettlementMinor: usdc('200') }), context).outcome).toBe(
      'allow',
    );
    const over = evaluatePolicy(DEFAULT_POLICY, moneyAction({ amountSettlementMinor: usdc('200.000001') }), context);
    expect(over.outcome).toBe('deny');
    expect(over.reasons[0]?.rule).toBe('daily_cap');
    expect(over.reasons[0]?.reason).toContain('200 USDC remains');
  });

  it('api: no confirmation at any size, no cap, denied above 1,000,000 USDC', () => {
    const api = (amount: string, spent = '0') =>
      evaluatePolicy(
        DEFAULT_POLICY,
        moneyAction({ channel: 'api', amountSettlementMinor: usdc(amount) }),
        policyContext({ spentLast24hSettlementMinor: usdc(spent) }),
      );
    expect(api('1000000', '50000000').outcome).toBe('allow');
    expect(api('1000000.000001').outcome).toBe('deny');
  });

  it('a money action whose amount has no FX rate is denied, naming every check it blocks', () => {
    const decision = evaluatePolicy(DEFAULT_POLICY, moneyAction({ amountSettlementMinor: undefined }), policyContext());
    expect(decision.outcome).toBe('deny');
    expect(outcomes(decision.reasons)).toEqual([
      ['amount_known', 'deny'],
      ['deny_above', 'deny'],
      ['daily_cap', 'deny'],
      ['confirm_above', 'deny'],
      ['first_payout', 'allow'],
    ]);
    // Even a channel with no limits at all refuses what it cannot price.
    const open = withChannel('api', { deny_above: null });
    const api = evaluatePolicy(
      open,
      moneyAction({ channel: 'api', amountSettlementMinor: undefined }),
      policyContext(),
    );
    expect(outcomes(api.reasons)).toEqual([['amount_known', 'deny']]);
  });
});

describe('evaluatePolicy with satisfiedConfirmation (executing an approved hold)', () => {
  const satisfied = { satisfiedConfirmation: true };

  it('lifts the confirmation it satisfies, keeping the reason', () => {
    const action = moneyAction({ amountSettlementMinor: usdc('5000'), recipients: [NEW_ADDRESS] });
    expect(evaluatePolicy(DEFAULT_POLICY, action, policyContext()).outcome).toBe('require_confirmation');
    const decision = evaluatePolicy(DEFAULT_POLICY, action, policyContext(), satisfied);
    expect(decision.outcome).toBe('allow');
    expect(decision.reasons.find((r) => r.rule === 'confirm_above')).toEqual({
      rule: 'confirm_above',
      outcome: 'allow',
      reason: "5,000 USDC is above the agent channel's confirmation threshold of 1,000 USDC; confirmed by an approver",
    });
    expect(decision.reasons.find((r) => r.rule === 'first_payout')?.outcome).toBe('allow');
  });

  it('never lifts a deny', () => {
    const decision = evaluatePolicy(
      DEFAULT_POLICY,
      moneyAction({ amountSettlementMinor: usdc('60000') }),
      policyContext(),
      satisfied,
    );
    expect(decision.outcome).toBe('deny');
  });

  it('re-checks the cap: an approval does not get past spending that happened while it waited', () => {
    const action = moneyAction({ amountSettlementMinor: usdc('5000') });
    const later = policyContext({ spentLast24hSettlementMinor: usdc('6000') });
    const decision = evaluatePolicy(DEFAULT_POLICY, action, later, satisfied);
    expect(decision.outcome).toBe('deny');
    expect(decision.reasons[0]?.rule).toBe('daily_cap');
  });

  it('re-checks the lists and the tool switch: a policy tightened while the action waited wins', () => {
    const action = moneyAction({ amountSettlementMinor: usdc('5000') });
    const denylisted: Policy = { ...DEFAULT_POLICY, recipients: { allowlist: null, denylist: [KNOWN_ADDRESS] } };
    expect(evaluatePolicy(denylisted, action, policyContext(), satisfied).outcome).toBe('deny');
    const disabled: Policy = { ...DEFAULT_POLICY, tools: { disabled: ['create_payout'] } };
    expect(evaluatePolicy(disabled, action, policyContext(), satisfied).outcome).toBe('deny');
  });

  it('changes nothing for an action that needed no confirmation', () => {
    const decision = evaluatePolicy(DEFAULT_POLICY, moneyAction(), policyContext(), satisfied);
    expect(decision).toEqual(evaluatePolicy(DEFAULT_POLICY, moneyAction(), policyContext()));
  });
});

describe('evaluatePolicy for read and write actions', () => {
  const disabledList: Policy = { ...DEFAULT_POLICY, tools: { disabled: ['list_payments', 'create_payment'] } };

  it('allows them without the money rules, whatever money fields they carry', () => {
    const read = moneyAction({ tool: 'get_payment', effect: 'read', amountSettlementMinor: undefined });
    expect(evaluatePolicy(DEFAULT_POLICY, read, policyContext())).toEqual({ outcome: 'allow', reasons: [] });
    const write = moneyAction({ tool: 'create_payment', effect: 'write', amountSettlementMinor: usdc('99999999') });
    expect(evaluatePolicy(DEFAULT_POLICY, write, policyContext()).outcome).toBe('allow');
  });

  it('denies a disabled tool, read tools included', () => {
    const read = moneyAction({
      tool: 'list_payments',
      effect: 'read',
      amountSettlementMinor: undefined,
      recipients: [],
    });
    expect(evaluatePolicy(disabledList, read, policyContext()).outcome).toBe('deny');
    const write = moneyAction({ tool: 'create_payment', effect: 'write', channel: 'api' });
    expect(evaluatePolicy(disabledList, write, policyContext()).outcome).toBe('deny');
  });
});

describe('evaluatePolicy on the system channel', () => {
  it('does not policy-check the service’s own workers, and says so', () => {
    const strict: Policy = { ...DEFAULT_POLICY, tools: { disabled: ['create_payout'] } };
    const action = moneyAction({ channel: 'system', amountSettlementMinor: undefined });
    const decision = evaluatePolicy(strict, action, policyContext());
    expect(decision).toEqual({
      outcome: 'allow',
      reasons: [
        {
          rule: 'policy_engine',
          outcome: 'allow',
          reason: "The system channel (the service's own workers) is not policy-checked",
        },
      ],
    });
  });
});

describe('evaluatePolicy when something is wrong', () => {
  it('denies when a rule throws, naming the rule and the error', () => {
    const broken = { ...DEFAULT_POLICY, channels: { api: DEFAULT_POLICY.channels.api } } as unknown as Policy;
    const decision = evaluatePolicy(broken, moneyAction(), policyContext());
    expect(decision.outcome).toBe('deny');
    expect(decision.reasons.map((r) => r.rule)).toEqual(['deny_above', 'daily_cap', 'confirm_above', 'first_payout']);
    expect(decision.reasons[0]?.reason).toBe(
      'The deny_above rule could not judge this action (the policy has no limits for the agent channel)',
    );
  });

  it('denies when the context misbehaves', () => {
    const context: PolicyContext = {
      spentLast24hSettlementMinor: 0n,
      knownRecipients: {
        has(): boolean {
          throw new Error('recipient history unavailable');
        },
      } as unknown as ReadonlySet<string>,
      run: null,
    };
    const decision = evaluatePolicy(DEFAULT_POLICY, moneyAction(), context);
    expect(decision.outcome).toBe('deny');
    expect(decision.reasons[0]).toEqual({
      rule: 'first_payout',
      outcome: 'deny',
      reason: 'The first_payout rule could not judge this action (recipient history unavailable)',
    });
  });

  it('denies an unknown channel or effect rather than guessing', () => {
    const channel = moneyAction({ channel: 'webhook' as never });
    expect(evaluatePolicy(DEFAULT_POLICY, channel, policyContext()).outcome).toBe('deny');
    const effect = moneyAction({ effect: 'transfer' as never });
    expect(evaluatePolicy(DEFAULT_POLICY, effect, policyContext()).outcome).toBe('deny');
  });
});

describe("an assistant's key: its own channel's limits and the assistant's", () => {
  it('judges an assistant key by its channel and mcp; other keys, and the system, by their channel alone', () => {
    expect(judgingChannels({ channel: 'api', assistant: true })).toEqual(['api', 'mcp']);
    expect(judgingChannels({ channel: 'agent', assistant: true })).toEqual(['agent', 'mcp']);
    expect(judgingChannels({ channel: 'mcp', assistant: true })).toEqual(['mcp']);
    expect(judgingChannels({ channel: 'api' })).toEqual(['api']);
    expect(judgingChannels({ channel: 'system', assistant: true })).toEqual(['system']);
  });

  it('keeps the strictest outcome and every distinct reason once', () => {
    const action = moneyAction({ amountSettlementMinor: usdc('5000') });
    const decision = strictestDecision([
      evaluatePolicy(DEFAULT_POLICY, { ...action, channel: 'api' }, policyContext()),
      evaluatePolicy(DEFAULT_POLICY, { ...action, channel: 'mcp' }, policyContext()),
    ]);
    expect(decision.outcome).toBe('require_confirmation');
    expect(decision.reasons[0]!.reason).toContain("mcp channel's confirmation threshold");
    const texts = decision.reasons.map((r) => r.reason);
    expect(new Set(texts).size).toBe(texts.length);
    // A reason two channels share (a rule that reads no channel limit) is listed once.
    const mcp = evaluatePolicy(DEFAULT_POLICY, { ...action, channel: 'mcp' }, policyContext());
    expect(strictestDecision([mcp, mcp])).toEqual(mcp);
  });
});
