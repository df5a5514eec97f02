import { z } from 'zod';
import { defineTool } from '../../src/core/tool.ts';
import { credit, debit, ledgerAccount } from '../../src/ledger/ledger.ts';
import { postLedger } from '../../src/db/money-writes/ledger.ts';

/**
 * The first sight of a treasury (a settlement contract on a chain): its token balance then is what
 * the operator funded it with, posted once as its opening balance (treasury ← the chain's funding
 * account). Nothing of ours can be in flight on it yet: batches are sent only after this. A second
 * run for the same treasury is refused by the ledger (DuplicatePostingError): same treasury, same
 * opening. The service's own money, no merchant's: no merchant's action log records it; the ledger
 * posting (kind treasury_opening, reference the treasury) is its record.
 */
export const recordTreasuryOpening = defineTool({
  name: 'record_treasury_opening',
  title: "Record a treasury's opening balance",
  description: 'Posts the token balance of a treasury seen for the first time as its opening balance.',
  input: z.strictObject({
    chain_key: z.string().min(1).max(200),
    batch_address: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
    asset: z.string().min(1).max(16),
    balance_minor: z.string().regex(/^\d{1,78}$/),
  }),
  output: z.object({ treasury: z.string(), opened: z.boolean(), balance_minor: z.string() }),
  effect: 'money',
  scope: 'payouts:write',
  system: {
    // The service's own money: no merchant account to log it in.
    async accounts() {
      return [];
    },
  },
  async handler(input, { db }) {
    const treasury = ledgerAccount.treasury(input.chain_key, input.batch_address, input.asset);
    const balance = BigInt(input.balance_minor);
    await postLedger(db, {
      kind: 'treasury_opening',
      reference: treasury.id,
      entries: [debit(treasury, balance), credit(ledgerAccount.funding(input.chain_key, input.asset), balance)],
    });
    return { treasury: treasury.id, opened: true, balance_minor: input.balance_minor };
  },
});
