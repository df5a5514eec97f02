// The x402 authorization tools through the pipeline, on a real database (no chain: the worker's
// chain facts are their input). record_x402_authorization records once and holds the payment it
// pays; confirm_x402_authorization credits the treasury and pays it once; fail_x402_authorization
// moves nothing and makes a session payable again; revert_x402_authorization undoes a credit a
// reorg took away, and the transfer landing again does not pay the payment twice.

import { beforeAll, describe, expect, it } from 'vitest';
import { getLedgerBalance, ledgerAccount } from '../../src/ledger/ledger.ts';
import { runSystemTool } from '../../src/pipeline/system-runs.ts';
import type { Runtime } from '../../src/runtime.ts';
import { testAccount, testRuntime } from '../../test/support/harness.ts';
import { expectLedgerBalanced } from '../../test/support/money.ts';
import { eventTypes, expectRefusedOffSystem, pendingPayment, testMode } from '../../test/support/system-tools.ts';
import {
  confirmX402Authorization,
  failX402Authorization,
  recordX402Authorization,
  revertX402Authorization,
} from './x402-authorizations.ts';

let runtime: Runtime;
let accountId: string;
const chain = {
  key: 'devnet:31337:x402-tools',
  chain_id: 31337,
  batch_address: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512',
  asset: 'USDC',
  ephemeral: false,
};
const treasury = () => ledgerAccount.treasury(chain.key, chain.batch_address, 'USDC');
const hex = (n: number, bytes: number) => `0x${n.toString(16).padStart(bytes * 2, '0')}`;
let nonces = 0;

beforeAll(async () => {
  runtime = await testRuntime();
  accountId = (await testAccount(runtime)).accountId;
});

function authorization(value: bigint, paymentId?: string) {
  nonces += 1;
  return {
    ...(paymentId ? { payment_id: paymentId } : {}),
    chain_id: chain.chain_id,
    token: hex(0x5fbd, 20),
    payer: hex(0xa11ce, 20),
    nonce: hex(nonces, 32),
    pay_to: chain.batch_address,
    value_minor: value.toString(),
    valid_after: '0',
    valid_before: '99999999999',
    signature: `0x${'ab'.repeat(65)}`,
    request_hash: 'f'.repeat(64),
    resource: { url: 'https://merchant.example/report', description: 'The weekly report' },
  };
}

const receipt = (n: number) => ({
  hash: hex(n, 32),
  block_number: String(n),
  block_hash: hex(n + 1000, 32),
  gas_used: '60000',
  effective_gas_price: '1',
});

async function payment(id: string) {
  return await runtime.db.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

async function record(input: ReturnType<typeof authorization>) {
  return await runSystemTool(runtime, recordX402Authorization, input, testMode(accountId));
}

describe('the x402 authorization tools', () => {
  it('are refused on every channel but system', async () => {
    await expectRefusedOffSystem(runtime, recordX402Authorization, authorization(1n), testMode(accountId));
  });

  it('record once, credit once at confirmation, and pay the payment once (a reorg and a second landing included)', async () => {
    const input = authorization(250_000n);
    const recorded = await record(input);
    expect(recorded).toMatchObject({ result: 'recorded', authorization: { status: 'recorded' } });
    const id = recorded.authorization!.id;
    const paymentId = recorded.authorization!.payment_id;
    expect(await payment(paymentId)).toMatchObject({
      status: 'processing',
      currency: 'USDC',
      amount_minor: 250_000n,
      gross_settlement_minor: 250_000n,
      quote_source: 'identity',
    });
    expect(await record(input)).toMatchObject({ result: 'existing', authorization: { id } });
    expect(await runtime.db.selectFrom('x402_authorizations').select('id').execute()).toHaveLength(1);

    const confirm = (n: number) =>
      runSystemTool(
        runtime,
        confirmX402Authorization,
        { authorization_id: id, chain, receipt: receipt(n) },
        testMode(accountId),
      );
    expect(await confirm(1)).toMatchObject({ changed: true, payment_status: 'paid' });
    expect(await confirm(1)).toMatchObject({ changed: false });
    expect(await getLedgerBalance(runtime.db, treasury())).toBe(250_000n);

    const reverted = await runSystemTool(
      runtime,
      revertX402Authorization,
      { authorization_id: id, chain, tx_hash: receipt(1).hash, reason: 'reorg' },
      testMode(accountId),
    );
    expect(reverted).toMatchObject({ changed: true, payment_status: 'paid' });
    expect(await getLedgerBalance(runtime.db, treasury())).toBe(0n);
    expect(await confirm(2)).toMatchObject({ changed: true, payment_status: 'paid' });
    expect(await getLedgerBalance(runtime.db, treasury())).toBe(250_000n);
    expect(await eventTypes(runtime, paymentId)).toEqual(['payment.paid']);
    const postings = await runtime.db
      .selectFrom('ledger_postings')
      .select(['kind', 'reference'])
      .where('reference', 'like', `${id}%`)
      .orderBy('id')
      .execute();
    expect(postings.map((p) => `${p.kind} ${p.reference}`)).toEqual([
      `usdc_received ${id}`,
      `usdc_reverted ${id}:0`,
      `usdc_received ${id}:1`,
    ]);
    await expectLedgerBalanced(runtime);
  });

  it('pays a checkout session only for its locked gross, once; a failure makes it payable again, nothing moved', async () => {
    const session = await pendingPayment(runtime, accountId);
    const gross = (await payment(session)).gross_settlement_minor;
    expect(await record(authorization(gross + 1n, session))).toMatchObject({
      result: 'refused',
      refusal: { reason: 'invalid_exact_evm_payload_authorization_value' },
    });
    expect((await payment(session)).status).toBe('pending');

    const recorded = await record(authorization(gross, session));
    expect(recorded).toMatchObject({ result: 'recorded', authorization: { payment_id: session } });
    expect((await payment(session)).status).toBe('processing');
    expect(await record(authorization(gross, session))).toMatchObject({
      result: 'refused',
      refusal: { reason: 'invalid_transaction_state' },
    });

    const before = await getLedgerBalance(runtime.db, treasury());
    const failed = await runSystemTool(
      runtime,
      failX402Authorization,
      {
        authorization_id: recorded.authorization!.id,
        reason: 'invalid_exact_evm_payload_authorization_valid_before',
        message: 'expired unused',
      },
      testMode(accountId),
    );
    expect(failed).toMatchObject({ changed: true, payment_status: 'pending' });
    expect(await getLedgerBalance(runtime.db, treasury())).toBe(before);
    const attempt = await runtime.db
      .selectFrom('payment_attempts')
      .select(['rail', 'outcome'])
      .where('payment_id', '=', session)
      .execute();
    expect(attempt).toEqual([{ rail: 'usdc', outcome: 'failed' }]);
  });
});
