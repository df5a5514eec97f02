// The ledger's rules, enforced where it matters: postings balance per asset (code and database),
// balances cannot go negative (database), history is append-only, one posting per (kind, reference),
// and balances are derived from entries. Plus enqueueTransfer's refusals and the intake's choices.

import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { findPaymentById } from '../src/db/repositories/payments.ts';
import {
  checkLedgerInvariants,
  credit,
  DuplicatePostingError,
  debit,
  getLedgerBalance,
  InsufficientBalanceError,
  LedgerError,
  ledgerAccount,
} from '../src/ledger/ledger.ts';
import { postLedger } from '../src/db/money-writes/ledger.ts';
import type { Runtime } from '../src/runtime.ts';
import { openChainSession } from '../src/settlement/chain-session.ts';
import { settlePaidPayments } from '../src/settlement/payment-settlement.ts';
import { TransferRefusedError } from '../src/domain/recipients.ts';
import { netTransfers } from '../src/settlement/transfers.ts';
import { DuplicateTransferError, enqueueTransfer } from '../src/db/money-writes/transfers.ts';
import { testAccount } from './support/harness.ts';
import { payoutAddresses, settlementRuntime } from './support/settlement.ts';
import { createPaidPayments } from './support/settlement-fixtures.ts';

let runtime: Runtime;
let chain: ChainConnection;

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain);
  return () => chain.close();
});

const unique = (): string => `ref_${Math.random().toString(36).slice(2)}`;

async function fundedMerchant(
  amount: bigint,
): Promise<{ accountId: string; balance: ReturnType<typeof ledgerAccount.merchant> }> {
  const merchant = await testAccount(runtime);
  const balance = ledgerAccount.merchant(merchant.accountId, false, 'USDC');
  await runtime.db.transaction().execute((trx) =>
    postLedger(trx, {
      kind: 'test_funding',
      reference: unique(),
      entries: [debit(ledgerAccount.fx(false, 'USDC'), amount), credit(balance, amount)],
    }),
  );
  return { accountId: merchant.accountId, balance };
}

describe('ledger', () => {
  it('refuses an unbalanced posting in code, per asset', async () => {
    const a = ledgerAccount.fees(false, 'USDC');
    const b = ledgerAccount.fx(false, 'NGN');
    await expect(
      runtime.db
        .transaction()
        .execute((trx) =>
          postLedger(trx, { kind: 'bad', reference: unique(), entries: [debit(a, 5n), credit(b, 5n)] }),
        ),
    ).rejects.toBeInstanceOf(LedgerError);
  });

  it('the database refuses an unbalanced posting written behind the code', async () => {
    const fees = ledgerAccount.fees(false, 'USDC');
    await runtime.db.transaction().execute((trx) =>
      postLedger(trx, {
        kind: 'seed',
        reference: unique(),
        entries: [debit(ledgerAccount.fx(false, 'USDC'), 1n), credit(fees, 1n)],
      }),
    );
    await expect(
      runtime.db.transaction().execute(async (trx) => {
        const posting = await trx
          .insertInto('ledger_postings')
          .values({ kind: 'sneaky', reference: unique() })
          .returning('id')
          .executeTakeFirstOrThrow();
        await trx
          .insertInto('ledger_entries')
          .values({ posting_id: posting.id, account_id: fees.id, asset: 'USDC', amount_minor: -7n })
          .execute();
      }),
    ).rejects.toThrow(/does not balance/);
  });

  it('the database refuses a negative merchant balance (InsufficientBalanceError) and rolls it all back', async () => {
    const { balance } = await fundedMerchant(1_000n);
    await expect(
      runtime.db.transaction().execute((trx) =>
        postLedger(trx, {
          kind: 'overdraw',
          reference: unique(),
          entries: [debit(balance, 1_001n), credit(ledgerAccount.inFlight('USDC'), 1_001n)],
        }),
      ),
    ).rejects.toBeInstanceOf(InsufficientBalanceError);
    expect(await getLedgerBalance(runtime.db, balance)).toBe(1_000n);
    // Directly in SQL too: the CHECK is the guard, not the code.
    await expect(
      sql`update ledger_accounts set balance_minor = -1 where id = ${balance.id}`.execute(runtime.db),
    ).rejects.toThrow(/ledger_balance_not_negative/);
  });

  it('is append-only and takes one posting per (kind, reference)', async () => {
    const reference = unique();
    const posting = {
      kind: 'once',
      reference,
      entries: [debit(ledgerAccount.fx(false, 'USDC'), 3n), credit(ledgerAccount.fees(false, 'USDC'), 3n)],
    };
    await runtime.db.transaction().execute((trx) => postLedger(trx, posting));
    await expect(runtime.db.transaction().execute((trx) => postLedger(trx, posting))).rejects.toBeInstanceOf(
      DuplicatePostingError,
    );
    await expect(sql`update ledger_entries set amount_minor = 1`.execute(runtime.db)).rejects.toThrow(/append-only/);
    await expect(sql`delete from ledger_postings`.execute(runtime.db)).rejects.toThrow(/append-only/);
  });

  it('keeps materialised balances equal to the sum of entries', async () => {
    await fundedMerchant(5n);
    const report = await checkLedgerInvariants(runtime.db);
    expect(report.problems).toEqual([]);
    expect(report.assets.every((a) => a.debits === a.credits)).toBe(true);
  });
});

describe('chain sessions', () => {
  it('twelve devnet starts on one database: each treasury is balanced by its own funding account', async () => {
    // Every start of the embedded devnet is a new chain holding a 10^18-unit treasury. One funding
    // account shared by all of them left the int8 range at the tenth start (a 500 on every
    // later test funding), so each chain has its own.
    const sessions = [];
    for (let i = 0; i < 12; i += 1) sessions.push(await openChainSession(runtime, { ...chain }));
    expect(new Set(sessions.map((s) => s.key)).size).toBe(12);
    for (const session of sessions) {
      const treasury = await getLedgerBalance(runtime.db, session.treasury);
      expect(treasury).toBeGreaterThanOrEqual(10n ** 18n);
      expect(await getLedgerBalance(runtime.db, ledgerAccount.funding(session.key, session.asset))).toBe(treasury);
    }
    expect((await checkLedgerInvariants(runtime.db)).problems).toEqual([]);
  });
});

describe('enqueueTransfer', () => {
  it('moves the amount from the custodial balance to in-flight and queues one transfer', async () => {
    const { accountId, balance } = await fundedMerchant(2_000_000n);
    const inFlightBefore = await getLedgerBalance(runtime.db, ledgerAccount.inFlight('USDC'));
    const [to] = payoutAddresses(1);
    const transfer = await runtime.db.transaction().execute((trx) =>
      enqueueTransfer(trx, {
        kind: 'payout',
        sourceId: unique(),
        accountId,
        livemode: false,
        recipient: to!.toLowerCase(),
        amountMinor: 1_500_000n,
      }),
    );
    expect(transfer).toMatchObject({ status: 'queued', amount_minor: 1_500_000n, recipient: to, asset: 'USDC' });
    expect(await getLedgerBalance(runtime.db, balance)).toBe(500_000n);
    expect(await getLedgerBalance(runtime.db, ledgerAccount.inFlight('USDC'))).toBe(inFlightBefore + 1_500_000n);
    // No worker runs in this file, and its database is its own: the transfer simply stays queued.
  });

  it('refuses more than the balance, a second transfer for one source, a zero amount and the zero address', async () => {
    const { accountId, balance } = await fundedMerchant(100n);
    const [to] = payoutAddresses(1);
    const base = { kind: 'payout' as const, accountId, livemode: false, recipient: to! };
    await expect(
      runtime.db
        .transaction()
        .execute((trx) => enqueueTransfer(trx, { ...base, sourceId: unique(), amountMinor: 101n })),
    ).rejects.toBeInstanceOf(InsufficientBalanceError);
    const sourceId = unique();
    await expect(
      runtime.db.transaction().execute(async (trx) => {
        await enqueueTransfer(trx, { ...base, sourceId, amountMinor: 10n });
        await enqueueTransfer(trx, { ...base, sourceId, amountMinor: 10n });
      }),
    ).rejects.toBeInstanceOf(DuplicateTransferError);
    await expect(
      runtime.db.transaction().execute((trx) => enqueueTransfer(trx, { ...base, sourceId: unique(), amountMinor: 0n })),
    ).rejects.toBeInstanceOf(TransferRefusedError);
    await expect(
      runtime.db
        .transaction()
        .execute((trx) =>
          enqueueTransfer(trx, { ...base, sourceId: unique(), amountMinor: 1n, recipient: `0x${'0'.repeat(40)}` }),
        ),
    ).rejects.toBeInstanceOf(TransferRefusedError);
    expect(await getLedgerBalance(runtime.db, balance)).toBe(100n);
  });

  it('nets transfers to one recipient whatever the address case, in a stable order', () => {
    const [a, b] = payoutAddresses(2);
    const lines = netTransfers([
      { recipient: b!, amount_minor: 1n },
      { recipient: a!.toLowerCase(), amount_minor: 2n },
      { recipient: a!, amount_minor: 3n },
    ]);
    const expected = [
      { recipient: a!, amount: 5n },
      { recipient: b!, amount: 1n },
    ].sort((x, y) => (x.recipient.toLowerCase() < y.recipient.toLowerCase() ? -1 : 1));
    expect(lines).toEqual(expected);
  });
});

describe('payment intake', () => {
  it('a stored payout address no transfer may go to settles into the balance and blocks no one', async () => {
    const merchant = await testAccount(runtime);
    const [to] = payoutAddresses(1);
    const [bad, good] = await createPaidPayments(runtime, merchant.accountId, [
      { amount: 1000, currency: 'NGN', payoutAddress: to! },
      { amount: 2000, currency: 'NGN', payoutAddress: to! },
    ]);
    // Written behind the API (validation refuses the zero address): the transfer would be refused.
    await runtime.db
      .updateTable('payments')
      .set({ payout_address: `0x${'0'.repeat(40)}` })
      .where('id', '=', bad!.id)
      .execute();
    const intake = () =>
      settlePaidPayments(runtime, {
        chunk: 100,
        testModeOnChain: async () => true,
      });
    while ((await intake()) > 0);
    expect((await findPaymentById(runtime.db, bad!.id))?.status).toBe('settled');
    expect((await findPaymentById(runtime.db, bad!.id))?.settlement_destination).toBe('balance');
    expect((await findPaymentById(runtime.db, good!.id))?.status).toBe('settling');
    expect((await checkLedgerInvariants(runtime.db)).problems).toEqual([]);
  });

  it('never pays test-mode money out on a known mainnet: settles it into the balance', async () => {
    const merchant = await testAccount(runtime);
    const [payment] = await createPaidPayments(runtime, merchant.accountId, [
      { amount: 3000, currency: 'NGN', payoutAddress: payoutAddresses(1)[0]! },
    ]);
    let taken = 0;
    do {
      taken = await settlePaidPayments(runtime, {
        chunk: 100,
        testModeOnChain: async () => false,
      });
    } while (taken > 0);
    const row = await findPaymentById(runtime.db, payment!.id);
    expect(row?.status).toBe('settled');
    expect(row?.settlement_destination).toBe('balance');
    expect(await getLedgerBalance(runtime.db, ledgerAccount.merchant(merchant.accountId, false, 'USDC'))).toBe(
      payment!.settlement_minor,
    );
    // The payment in the ledger: local currency in, settlement asset out to the merchant and fees.
    const entries = await runtime.db
      .selectFrom('ledger_entries as e')
      .innerJoin('ledger_postings as p', 'p.id', 'e.posting_id')
      .select(['e.account_id', 'e.asset', 'e.amount_minor'])
      .where('p.kind', '=', 'payment_received')
      .where('p.reference', '=', payment!.id)
      .execute();
    const byAccount = Object.fromEntries(
      entries.map((e) => [e.account_id.replace(merchant.accountId, 'M'), e.amount_minor]),
    );
    expect(byAccount).toEqual({
      'rail_clearing:test:NGN': payment!.amount_minor,
      'fx:test:NGN': -payment!.amount_minor,
      'fx:test:USDC': payment!.gross_settlement_minor,
      'merchant:M:test:USDC': -payment!.settlement_minor,
      'fees:test:USDC': -payment!.fee_minor,
    });
    expect((await checkLedgerInvariants(runtime.db)).problems).toEqual([]);
  });
});
