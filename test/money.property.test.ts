import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { AppError } from '../src/core/errors.ts';
import { executedOutput, executeTool } from '../src/pipeline/execute-tool.ts';
import type { Actor, Channel } from '../src/core/tool.ts';
import { checkLedgerInvariants, getLedgerBalance, ledgerAccount } from '../src/ledger/ledger.ts';
import { paySandbox } from '../src/payments/sandbox-rail.ts';
import { settlePaidPayments } from '../src/settlement/payment-settlement.ts';
import { createPayment } from '../tools/create-payment.ts';
import { createPayout } from '../tools/create-payout.ts';
import { refundPayment } from '../tools/refund-payment.ts';
import { splitRevenue } from '../tools/split-revenue.ts';
import { testAccount, testRuntime, type TestRuntime } from './support/harness.ts';
import { firstKeyAuth } from './support/money.ts';

let chain: ChainConnection;
let runtime: TestRuntime;

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await testRuntime({}, { chain });
});

afterAll(async () => {
  await chain.close();
});

const RECIPIENTS = [
  '0x1111111111111111111111111111111111111111',
  '0x2222222222222222222222222222222222222222',
  '0x3333333333333333333333333333333333333333',
];

type Step =
  | { op: 'pay'; amount: number; currency: 'NGN' | 'KES' | 'UGX' }
  | { op: 'payout'; amount: number; to: number; channel: Channel }
  | { op: 'refund'; which: number; fraction: number; channel: Channel }
  | { op: 'split'; amount: number; first: number; channel: Channel };

const channel = fc.constantFrom<Channel>('api', 'agent', 'mcp');
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    op: fc.constant('pay' as const),
    amount: fc.integer({ min: 100, max: 5_000_000 }),
    currency: fc.constantFrom('NGN' as const, 'KES' as const, 'UGX' as const),
  }),
  fc.record({
    op: fc.constant('payout' as const),
    amount: fc.integer({ min: 1, max: 3000 }),
    to: fc.integer({ min: 0, max: 2 }),
    channel,
  }),
  fc.record({
    op: fc.constant('refund' as const),
    which: fc.nat(),
    fraction: fc.double({ min: 0.01, max: 1, noNaN: true }),
    channel,
  }),
  fc.record({
    op: fc.constant('split' as const),
    amount: fc.integer({ min: 1, max: 2000 }),
    first: fc.integer({ min: 1, max: 9999 }),
    channel,
  }),
);

async function balance(accountId: string): Promise<bigint> {
  return getLedgerBalance(runtime.db, ledgerAccount.merchant(accountId, false, 'USDC'));
}

describe('money movement under random sequences', () => {
  it('never overdraws, never unbalances the ledger, never moves money without the policy allowing it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 14 }), async (steps) => {
        const merchant = await testAccount(runtime);
        const auth = await firstKeyAuth(runtime, merchant.accountId);
        const actorOn = (ch: Channel): Actor => ({ ...auth, channel: ch });
        const settled: string[] = [];

        for (const s of steps) {
          const before = await balance(merchant.accountId);
          let moved: 'executed' | 'held' | 'refused' = 'refused';
          try {
            if (s.op === 'pay') {
              const created = executedOutput(
                await executeTool(
                  createPayment,
                  { amount: s.amount, currency: s.currency, redirect_url: 'https://x.example/' },
                  { runtime, actor: actorOn('api') },
                ),
              );
              await paySandbox(runtime, { accountId: merchant.accountId, livemode: false }, created.id, 'succeeded');
              await settlePaidPayments(runtime, {
                chunk: 50,
                testModeOnChain: async () => true,
              });
              settled.push(created.id);
              expect(await balance(merchant.accountId)).toBeGreaterThanOrEqual(before);
              continue;
            }
            const result =
              s.op === 'payout'
                ? await executeTool(
                    createPayout,
                    { amount: s.amount, to_address: RECIPIENTS[s.to] },
                    { runtime, actor: actorOn(s.channel) },
                  )
                : s.op === 'refund'
                  ? settled.length === 0
                    ? undefined
                    : await executeTool(
                        refundPayment,
                        await refundInput(settled[s.which % settled.length]!, s.fraction),
                        { runtime, actor: actorOn(s.channel) },
                      )
                  : await executeTool(
                      splitRevenue,
                      {
                        amount: s.amount,
                        splits: [
                          { to_address: RECIPIENTS[0], share_bps: s.first },
                          { to_address: RECIPIENTS[1], share_bps: 10_000 - s.first },
                        ],
                      },
                      { runtime, actor: actorOn(s.channel) },
                    );
            if (result) moved = result.kind === 'executed' ? 'executed' : 'held';
          } catch (error) {
            if (!(error instanceof AppError)) throw error;
            moved = 'refused';
          }
          const after = await balance(merchant.accountId);
          expect(after).toBeGreaterThanOrEqual(0n);
          if (moved !== 'executed') expect(after).toBe(before);
        }

        // Every money action that moved something was allowed by the policy (or approved). The
        // service's own steps (channel system: a payment paid, settled) carry out what was already
        // decided and are never judged (docs/policy.md).
        const actions = await runtime.db
          .selectFrom('agent_actions')
          .selectAll()
          .where('account_id', '=', merchant.accountId)
          .where('channel', '<>', 'system')
          .execute();
        for (const a of actions) {
          if (a.status === 'executed') expect(a.decision).toBe('allow');
          if (a.decision === 'deny') expect(a.status).toBe('denied');
          if (a.decision === 'require_confirmation') expect(a.status).toBe('held');
        }
        const report = await checkLedgerInvariants(runtime.db);
        expect(report.problems).toEqual([]);
      }),
      { numRuns: 25, endOnFailure: true },
    );
  }, 300_000);
});

/** A refund of a fraction of what remains, in the payment's own units. */
async function refundInput(paymentId: string, fraction: number): Promise<{ payment_id: string; amount?: number }> {
  const row = await runtime.db.selectFrom('payments').selectAll().where('id', '=', paymentId).executeTakeFirstOrThrow();
  const remaining = row.amount_minor - row.refunded_minor;
  if (remaining <= 0n) return { payment_id: paymentId };
  const exponent = row.currency === 'UGX' ? 0 : 2;
  const minor = BigInt(Math.max(1, Math.floor(Number(remaining) * fraction)));
  return { payment_id: paymentId, amount: Number(minor) / 10 ** exponent };
}
