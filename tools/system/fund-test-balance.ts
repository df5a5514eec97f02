import { z } from 'zod';
import { AppError } from '../../src/core/errors.ts';
import { defineTool } from '../../src/core/tool.ts';
import { newId } from '../../src/domain/ids.ts';
import { SETTLEMENT_CURRENCY } from '../../src/domain/money.ts';
import { credit, debit, getLedgerBalance, InsufficientBalanceError, ledgerAccount } from '../../src/ledger/ledger.ts';
import { postLedger } from '../../src/db/money-writes/ledger.ts';

/**
 * Adds test USDC to a test-mode custodial balance (POST /v1/test_helpers/balance/fund). The money
 * is real on the test chain: it comes out of what the treasury was funded with (the chain's funding
 * account), so a test payout of it is paid in real test tokens. Test mode only; the route checks
 * that the chain's tokens are play money before it runs this.
 */
export const fundTestBalance = defineTool({
  name: 'fund_test_balance',
  title: 'Fund a test balance',
  description: 'Moves test USDC from the test treasury into a test-mode custodial balance.',
  input: z.strictObject({
    amount_minor: z.string().regex(/^[1-9]\d{0,30}$/),
    chain_key: z.string().min(1).max(200),
  }),
  output: z.object({ id: z.string(), amount_minor: z.string(), available_minor: z.string() }),
  effect: 'money',
  scope: 'payouts:write',
  system: {},
  async handler(input, { db, actor, now }) {
    if (actor.livemode) throw new AppError('invalid_request', 'Only a test-mode balance can be funded.');
    const asset = SETTLEMENT_CURRENCY.code;
    const amount = BigInt(input.amount_minor);
    const merchant = ledgerAccount.merchant(actor.accountId, false, asset);
    const id = newId('fund');
    try {
      await postLedger(db, {
        kind: 'test_funding',
        reference: id,
        at: now,
        entries: [debit(ledgerAccount.funding(input.chain_key, asset), amount), credit(merchant, amount)],
      });
    } catch (error) {
      if (error instanceof InsufficientBalanceError) {
        throw new AppError('insufficient_funds', 'The test treasury cannot cover this amount.', { param: 'amount' });
      }
      throw error;
    }
    const available = await getLedgerBalance(db, merchant);
    return { id, amount_minor: input.amount_minor, available_minor: available.toString() };
  },
});
