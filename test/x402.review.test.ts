// x402 settle against a payer who works against plainpay, and a node that lags (the money-safety
// review's cases): a used nonce with no event yet stays unknown; a canceled one fails; a second
// authorization with the same nonce landed first; a contract wallet whose signature check fails
// under real gas, or only in the block its transfer is mined in; validBefore and value beyond what
// plainpay records. Each ends with nothing credited that did not arrive, a reason, and the other
// payers unaffected.

import { encodeFunctionData, type Hex, keccak256, parseSignature, toHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ChainConnection, connectChain, readTreasuryBalance } from '../src/chain/chain.ts';
import { plainUsdAbi } from '../src/chain/contracts/abis.ts';
import { DEV_ACCOUNTS } from '../src/chain/devnet.ts';
import { sendAs } from '../src/chain/testing.ts';
import { SUBMIT_FAILURES_MIN_MS } from '../src/settlement/authorizations.ts';
import { type SettlementWorker, startSettlementWorker } from '../src/settlement/worker.ts';
import { caip2 } from '../src/x402/messages.ts';
import { settleAuthorization } from '../src/x402/settle.ts';
import { TRANSFER_WITH_AUTHORIZATION_TYPES, x402Target } from '../src/x402/verify-exact.ts';
import { type TestAccount, testAccount } from './support/harness.ts';
import { settlementRuntime, waitUntil } from './support/settlement.ts';
import { signExactPayment } from './support/x402.ts';

let chain: ChainConnection;
let runtime: Awaited<ReturnType<typeof settlementRuntime>>;
let merchant: TestAccount;
let w: SettlementWorker | undefined;
const payer = privateKeyToAccount(keccak256(toHex('x402 review payer')));

async function mint(to: Hex, amount: bigint) {
  const data = encodeFunctionData({ abi: plainUsdAbi, functionName: 'mint', args: [to, amount] });
  await sendAs(chain, DEV_ACCOUNTS.deployer.privateKey, { to: chain.tokenAddress, data });
}

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain);
  merchant = await testAccount(runtime);
  await mint(payer.address, 10_000_000n);
});
afterAll(async () => {
  await w?.stop();
  await chain?.close();
});

async function paymentStatus(id: string) {
  return (await runtime.db.selectFrom('payments').select('status').where('id', '=', id).executeTakeFirstOrThrow())
    .status;
}

/** The payer's own transferWithAuthorization of a recorded payload, landed by someone else. */
async function landDirectly(paid: Awaited<ReturnType<typeof signExactPayment>>) {
  const { signature, authorization: a } = paid.payload.payload as {
    signature: Hex;
    authorization: Record<string, string>;
  };
  const { r, s, v } = parseSignature(signature);
  const data = encodeFunctionData({
    abi: plainUsdAbi,
    functionName: 'transferWithAuthorization',
    args: [
      a.from as Hex,
      a.to as Hex,
      BigInt(a.value!),
      BigInt(a.validAfter!),
      BigInt(a.validBefore!),
      a.nonce as Hex,
      Number(v),
      r,
      s,
    ],
  });
  await sendAs(chain, DEV_ACCOUNTS.outsider.privateKey, { to: chain.tokenAddress, data });
}

it('keeps a used nonce in flight while the node shows no event for it, and confirms it once it does', async () => {
  const paid = await signExactPayment(chain, payer, 300_000n);
  const input = { accountId: merchant.accountId, livemode: false, ...paid };
  const pending = await settleAuthorization(runtime, input, { waitMs: 0 }); // recorded; no worker yet
  const paymentId = (pending as { paymentId: string }).paymentId;
  await landDirectly(paid); // the money reached the treasury
  // A node whose logs lag its state: authorizationState says used, the log query finds nothing.
  const client = chain.publicClient as { getContractEvents: (...args: never[]) => Promise<unknown[]> };
  const real = client.getContractEvents;
  let asked = 0;
  client.getContractEvents = async () => {
    asked += 1;
    return [];
  };
  const lagging = startSettlementWorker(runtime, { pollIntervalMs: 20 });
  try {
    await waitUntil('the worker to look at the logs a few times', async () => asked >= 6);
    const row = await runtime.db
      .selectFrom('x402_authorizations')
      .select('status')
      .where('payment_id', '=', paymentId)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('recorded'); // unknown: not failed as canceled
    expect(await paymentStatus(paymentId)).toBe('processing'); // not reopened for a second payer
    client.getContractEvents = real;
    expect(await settleAuthorization(runtime, input, { waitMs: 20_000 })).toMatchObject({ status: 'settled' });
  } finally {
    client.getContractEvents = real;
    await lagging.stop();
  }
}, 60_000);

it('fails an authorization its payer canceled, nothing moved, and reopens the payment', async () => {
  const paid = await signExactPayment(chain, payer, 250_000n);
  const input = { accountId: merchant.accountId, livemode: false, ...paid };
  const pending = await settleAuthorization(runtime, input, { waitMs: 0 }); // recorded; no worker yet
  const { nonce } = (paid.payload.payload as { authorization: { nonce: Hex } }).authorization;
  const target = await x402Target(chain);
  const cancel = await payer.signTypedData({
    domain: { name: target.name, version: target.version, chainId: chain.chainId, verifyingContract: target.asset },
    types: {
      CancelAuthorization: [
        { name: 'authorizer', type: 'address' },
        { name: 'nonce', type: 'bytes32' },
      ],
    },
    primaryType: 'CancelAuthorization',
    message: { authorizer: payer.address, nonce },
  });
  const { r, s, v } = parseSignature(cancel);
  const data = encodeFunctionData({
    abi: plainUsdAbi,
    functionName: 'cancelAuthorization',
    args: [payer.address, nonce, Number(v), r, s],
  });
  await sendAs(chain, DEV_ACCOUNTS.outsider.privateKey, { to: chain.tokenAddress, data });
  const treasuryBefore = await readTreasuryBalance(chain);
  const canceling = startSettlementWorker(runtime, { pollIntervalMs: 20 });
  try {
    const outcome = await settleAuthorization(runtime, input, { waitMs: 20_000 });
    expect(outcome).toMatchObject({ status: 'refused', reason: 'invalid_exact_evm_nonce_already_used' });
    expect((outcome as { message: string }).message).toContain('canceled');
    expect(await readTreasuryBalance(chain)).toBe(treasuryBefore);
    expect(await paymentStatus((pending as { paymentId: string }).paymentId)).toBe('pending');
  } finally {
    await canceling.stop();
  }
}, 60_000);

it('refuses, credits nothing, and reopens the payment when the nonce was used by a different transfer', async () => {
  const paid = await signExactPayment(chain, payer, 5_000_000n);
  const a = (paid.payload.payload as { authorization: Record<string, string> }).authorization;
  const input = { accountId: merchant.accountId, livemode: false, ...paid };
  const pending = await settleAuthorization(runtime, input, { waitMs: 0 }); // recorded; no worker yet
  expect(pending.status).toBe('pending');
  const paymentId = (pending as { paymentId: string }).paymentId;

  // The payer's own authorization B: the same nonce, 1 unit to themselves, landed first by anyone.
  const target = await x402Target(chain);
  const b = {
    from: payer.address,
    to: payer.address,
    value: 1n,
    validAfter: BigInt(a.validAfter!),
    validBefore: BigInt(a.validBefore!),
    nonce: a.nonce as Hex,
  };
  const sig = await payer.signTypedData({
    domain: { name: target.name, version: target.version, chainId: chain.chainId, verifyingContract: target.asset },
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: 'TransferWithAuthorization',
    message: b,
  });
  const { r, s, v } = parseSignature(sig);
  const data = encodeFunctionData({
    abi: plainUsdAbi,
    functionName: 'transferWithAuthorization',
    args: [b.from, b.to, b.value, b.validAfter, b.validBefore, b.nonce, Number(v), r, s],
  });
  await sendAs(chain, DEV_ACCOUNTS.outsider.privateKey, { to: chain.tokenAddress, data });

  const treasuryBefore = await readTreasuryBalance(chain);
  w = startSettlementWorker(runtime, { pollIntervalMs: 20 });
  const outcome = await settleAuthorization(runtime, input, { waitMs: 20_000 });
  expect(outcome).toMatchObject({ status: 'refused', reason: 'invalid_exact_evm_nonce_already_used' });
  expect(await readTreasuryBalance(chain)).toBe(treasuryBefore);
  expect(await paymentStatus(paymentId)).toBe('pending'); // reopened, never paid
}, 60_000);

it('fails an authorization that cannot be submitted after a few tries, without holding back the others', async () => {
  // A contract wallet whose ERC-1271 check says yes only at gas price 0 (eth_call): verification and
  // simulation pass, the relayer's gas estimate (real gas) reverts on every pass.
  const wallet = '0x00000000000000000000000000000000000c0de1' as const;
  // GASPRICE ISZERO PUSH1 9 JUMPI PUSH1 0 DUP1 REVERT JUMPDEST PUSH4 1626ba7e PUSH1 e0 SHL PUSH1 0 MSTORE PUSH1 20 PUSH1 0 RETURN
  const code = '0x3a15600957600080fd5b631626ba7e60e01b60005260206000f3';
  await chain.publicClient.request({ method: 'hardhat_setCode', params: [wallet, code] } as never);
  await mint(wallet, 10_000_000n);
  const target = await x402Target(chain);
  const now = BigInt(Math.floor(Date.now() / 1000));
  const requirements = {
    scheme: 'exact',
    network: caip2(chain.chainId),
    amount: '100000',
    asset: target.asset,
    payTo: target.payTo,
    maxTimeoutSeconds: 60,
    extra: { name: target.name, version: target.version },
  };
  const authorization = {
    from: wallet,
    to: target.payTo,
    value: '100000',
    validAfter: String(now - 600n),
    validBefore: String(now + 90n),
    nonce: keccak256(toHex('review grief')),
  };
  const payload = {
    x402Version: 2,
    accepted: requirements,
    payload: { signature: `0x${'11'.repeat(64)}1b` as Hex, authorization },
  };
  w ??= startSettlementWorker(runtime, { pollIntervalMs: 20 });
  const griefInput = { accountId: merchant.accountId, livemode: false, payload, requirements };
  const grief = await settleAuthorization(runtime, griefInput, { waitMs: 0 });
  expect(grief.status).toBe('pending');

  const honest = privateKeyToAccount(keccak256(toHex('x402 review honest payer')));
  await mint(honest.address, 10_000_000n);
  const paid = await signExactPayment(chain, honest, 200_000n);
  const settled = await settleAuthorization(
    runtime,
    { accountId: merchant.accountId, livemode: false, ...paid },
    { waitMs: 20_000 },
  );
  expect(settled.status).toBe('settled');

  // The grief row has failed every pass meanwhile; past the time it may fail over, it fails for good.
  runtime.clock.advance(SUBMIT_FAILURES_MIN_MS);
  const failed = await settleAuthorization(runtime, griefInput, { waitMs: 20_000 });
  expect(failed).toMatchObject({ status: 'refused', reason: 'invalid_transaction_state' });
  expect(await paymentStatus((grief as { paymentId: string }).paymentId)).not.toBe('paid');
  const sent = await runtime.db
    .selectFrom('x402_authorizations as x')
    .innerJoin('chain_transactions as t', 't.authorization_id', 'x.id')
    .where('x.payer', '=', wallet)
    .select('t.hash')
    .execute();
  expect(sent).toEqual([]); // nothing signed for it: nothing can land later from plainpay's side
}, 60_000);

it('refuses validBefore far beyond maxTimeoutSeconds, and a value beyond what a payment holds, with the reason', async () => {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const forever = await signExactPayment(chain, payer, 100_000n, {
    validAfter: now - 600n,
    validBefore: 2n ** 256n - 1n,
  });
  const input = { accountId: merchant.accountId, livemode: false };
  expect(await settleAuthorization(runtime, { ...input, ...forever }, { waitMs: 0 })).toMatchObject({
    status: 'refused',
    reason: 'invalid_exact_evm_payload_authorization_valid_before',
    message: expect.stringContaining('too far ahead'),
  });
  const hour = await signExactPayment(chain, payer, 100_000n, { validAfter: now - 600n, validBefore: now + 3_600n });
  expect(await settleAuthorization(runtime, { ...input, ...hour }, { waitMs: 0 })).toMatchObject({
    status: 'refused',
    reason: 'invalid_exact_evm_payload_authorization_valid_before',
  });
  const huge = await signExactPayment(chain, payer, 2n ** 63n);
  expect(await settleAuthorization(runtime, { ...input, ...huge }, { waitMs: 0 })).toMatchObject({
    status: 'refused',
    reason: 'invalid_exact_evm_payload_authorization_value',
  });
  const recorded = await runtime.db
    .selectFrom('x402_authorizations')
    .select('nonce')
    .where(
      'nonce',
      'in',
      [forever, hour, huge].map((p) => (p.payload.payload as { authorization: { nonce: string } }).authorization.nonce),
    )
    .execute();
  expect(recorded).toEqual([]);
}, 60_000);

it('fails a transfer that kept reverting when mined after 3 submissions, nothing moved', async () => {
  // A contract wallet whose ERC-1271 check refuses only in the block whose number is in its slot 0:
  // each simulation (the next block) passes, and the test points slot 0 at the block it mines next.
  const wallet = '0x00000000000000000000000000000000000c0de2' as const;
  // NUMBER PUSH1 0 SLOAD EQ PUSH1 18 JUMPI PUSH4 1626ba7e PUSH1 e0 SHL PUSH1 0 MSTORE PUSH1 20 PUSH1 0 RETURN JUMPDEST PUSH1 0 DUP1 REVERT
  const code = '0x4360005414601857631626ba7e60e01b60005260206000f35b600080fd';
  await chain.publicClient.request({ method: 'hardhat_setCode', params: [wallet, code] } as never);
  await mint(wallet, 10_000_000n);
  const target = await x402Target(chain);
  const now = BigInt(Math.floor(Date.now() / 1000));
  const requirements = {
    scheme: 'exact',
    network: caip2(chain.chainId),
    amount: '100000',
    asset: target.asset,
    payTo: target.payTo,
    maxTimeoutSeconds: 60,
    extra: { name: target.name, version: target.version },
  };
  const authorization = {
    from: wallet,
    to: target.payTo,
    value: '100000',
    validAfter: String(now - 600n),
    validBefore: String(now + 90n),
    nonce: keccak256(toHex('review reverts when mined')),
  };
  const payload = {
    x402Version: 2,
    accepted: requirements,
    payload: { signature: `0x${'22'.repeat(64)}1b` as Hex, authorization },
  };
  const input = { accountId: merchant.accountId, livemode: false, payload, requirements };
  const treasuryBefore = await readTreasuryBalance(chain);
  await chain.setAutomine!(false);
  try {
    w ??= startSettlementWorker(runtime, { pollIntervalMs: 20 });
    const first = await settleAuthorization(runtime, input, { waitMs: 0 });
    expect(first.status).toBe('pending');
    const sent = async () =>
      await runtime.db
        .selectFrom('x402_authorizations as x')
        .innerJoin('chain_transactions as t', 't.authorization_id', 'x.id')
        .where('x.payer', '=', wallet)
        .where('t.status', 'in', ['signed', 'broadcast'])
        .select('t.hash')
        .execute();
    const seen = new Set<string>();
    for (let round = 1; round <= 3; round += 1) {
      // A fresh submission (a new relayer nonce), not the one just mined before the worker saw it.
      await waitUntil(`submission ${round}`, async () => (await sent()).some((t) => !seen.has(t.hash)));
      for (const t of await sent()) seen.add(t.hash);
      const next = (await chain.publicClient.getBlockNumber({ cacheTime: 0 })) + 1n;
      await chain.publicClient.request({
        method: 'hardhat_setStorageAt',
        params: [wallet, '0x0', toHex(next, { size: 32 })],
      } as never);
      await chain.mine!(1);
    }
    const outcome = await settleAuthorization(runtime, input, { waitMs: 20_000 });
    expect(outcome).toMatchObject({ status: 'refused', reason: 'invalid_transaction_state' });
    expect((outcome as { message: string }).message).toContain('reverted on chain 3 times');
    expect(await sent()).toEqual([]);
    expect(await readTreasuryBalance(chain)).toBe(treasuryBefore);
    expect(await paymentStatus((first as { paymentId: string }).paymentId)).not.toBe('paid');
  } finally {
    await chain.setAutomine!(true);
  }
}, 60_000);
