// PlainUSD's EIP-3009 (transfer with authorization), held to what USDC's FiatTokenV2_2 does, since
// x402's `exact` EVM scheme and the checkout's "Pay with USDC" sign exactly these messages. The
// signatures are made with viem's signTypedData, as a wallet or @x402/evm's client makes them.

import {
  type Address,
  encodeFunctionData,
  type Hex,
  hashDomain,
  keccak256,
  parseEventLogs,
  parseSignature,
  toHex,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain, readTokenBalance } from '../chain.ts';
import { DEV_ACCOUNTS } from '../devnet.ts';
import { freshAddresses, sendAs } from '../testing.ts';
import { plainUsdAbi } from './abis.ts';

let conn: ChainConnection;
const { deployer, relayer, outsider } = DEV_ACCOUNTS;
// The payer signs and holds no ETH; the relayer submits and pays the gas (what a facilitator does).
const payer = privateKeyToAccount(keccak256(toHex('eip3009 payer')));

const authorizationTypes = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;
const receiveTypes = { ReceiveWithAuthorization: authorizationTypes.TransferWithAuthorization } as const;
const cancelTypes = {
  CancelAuthorization: [
    { name: 'authorizer', type: 'address' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

interface Authorization {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}

const domain = (): { name: string; version: string; chainId: number; verifyingContract: Address } => ({
  name: 'Plain USD',
  version: '2',
  chainId: conn.chainId,
  verifyingContract: conn.tokenAddress,
});

let nonceSeq = 0;
const freshNonce = (): Hex => keccak256(toHex(`nonce ${nonceSeq++} ${Date.now()}`));

async function chainNow(): Promise<bigint> {
  return (await conn.publicClient.getBlock()).timestamp;
}

async function authorization(over: Partial<Authorization> = {}): Promise<Authorization> {
  const now = await chainNow();
  const [to] = freshAddresses(`to ${nonceSeq}`, 1) as [Address];
  return {
    from: payer.address,
    to,
    value: 1_000_000n,
    validAfter: now - 60n,
    validBefore: now + 600n,
    nonce: freshNonce(),
    ...over,
  };
}

const sign = (auth: Authorization, key = payer): Promise<Hex> =>
  key.signTypedData({
    domain: domain(),
    types: authorizationTypes,
    primaryType: 'TransferWithAuthorization',
    message: auth,
  });

function transferCall(auth: Authorization, signature: Hex, packed = false): { to: Address; data: Hex } {
  const base = [auth.from, auth.to, auth.value, auth.validAfter, auth.validBefore, auth.nonce] as const;
  const { r, s, v, yParity } = parseSignature(signature);
  const data = packed
    ? encodeFunctionData({ abi: plainUsdAbi, functionName: 'transferWithAuthorization', args: [...base, signature] })
    : encodeFunctionData({
        abi: plainUsdAbi,
        functionName: 'transferWithAuthorization',
        args: [...base, Number(v ?? BigInt(yParity + 27)), r, s],
      });
  return { to: conn.tokenAddress, data };
}

const used = (authorizer: Address, nonce: Hex): Promise<boolean> =>
  conn.publicClient.readContract({
    address: conn.tokenAddress,
    abi: plainUsdAbi,
    functionName: 'authorizationState',
    args: [authorizer, nonce],
  });

beforeAll(async () => {
  conn = await connectChain({ confirmations: 1 });
  const mint = encodeFunctionData({ abi: plainUsdAbi, functionName: 'mint', args: [payer.address, 100_000_000n] });
  await sendAs(conn, deployer.privateKey, { to: conn.tokenAddress, data: mint });
});
afterAll(async () => {
  await conn?.close();
});

describe('PlainUSD EIP-3009', () => {
  it('has the EIP-712 domain of USDC: name, version "2", chain id, the token address', async () => {
    const read = <F extends 'name' | 'version' | 'DOMAIN_SEPARATOR'>(functionName: F) =>
      conn.publicClient.readContract({ address: conn.tokenAddress, abi: plainUsdAbi, functionName });
    expect(await read('name')).toBe('Plain USD');
    expect(await read('version')).toBe('2');
    expect(await read('DOMAIN_SEPARATOR')).toBe(
      hashDomain({
        domain: { ...domain(), chainId: BigInt(conn.chainId) },
        types: {
          EIP712Domain: [
            { name: 'name', type: 'string' },
            { name: 'version', type: 'string' },
            { name: 'chainId', type: 'uint256' },
            { name: 'verifyingContract', type: 'address' },
          ],
        },
      }),
    );
  });

  it('moves the signed amount when anyone submits it, once, and marks the nonce used', async () => {
    for (const packed of [false, true]) {
      const auth = await authorization();
      const signature = await sign(auth);
      const before = await readTokenBalance(conn, payer.address);
      const receipt = await sendAs(conn, relayer.privateKey, transferCall(auth, signature, packed));
      expect(receipt.status).toBe('success');
      expect(await readTokenBalance(conn, auth.to)).toBe(auth.value);
      expect(await readTokenBalance(conn, payer.address)).toBe(before - auth.value);
      expect(await used(payer.address, auth.nonce)).toBe(true);
      const [usedEvent] = parseEventLogs({ abi: plainUsdAbi, eventName: 'AuthorizationUsed', logs: receipt.logs });
      expect(usedEvent?.args).toEqual({ authorizer: payer.address, nonce: auth.nonce });
      const [transfer] = parseEventLogs({ abi: plainUsdAbi, eventName: 'Transfer', logs: receipt.logs });
      expect(transfer?.args).toEqual({ from: payer.address, to: auth.to, value: auth.value });

      // The same authorization again: the nonce is spent.
      const again = await sendAs(conn, relayer.privateKey, transferCall(auth, signature, packed));
      expect(again.status).toBe('reverted');
      expect(await readTokenBalance(conn, auth.to)).toBe(auth.value);
    }
  });

  it('refuses a changed amount or recipient, another signer, a malleable s, expired and not-yet-valid ones', async () => {
    const auth = await authorization();
    const signature = await sign(auth);
    const outsiderKey = privateKeyToAccount(outsider.privateKey);
    const now = await chainNow();
    const expired = await authorization({ validBefore: now });
    const early = await authorization({ validAfter: now + 3_600n });
    const { r, s, yParity } = parseSignature(signature);
    const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const highS = `0x${(n - BigInt(s)).toString(16).padStart(64, '0')}` as Hex;
    const malleable = encodeFunctionData({
      abi: plainUsdAbi,
      functionName: 'transferWithAuthorization',
      args: [
        auth.from,
        auth.to,
        auth.value,
        auth.validAfter,
        auth.validBefore,
        auth.nonce,
        yParity === 0 ? 28 : 27,
        r,
        highS,
      ],
    });
    const refused: { to: Address; data: Hex }[] = [
      transferCall({ ...auth, value: auth.value + 1n }, signature),
      transferCall({ ...auth, to: outsider.address as Address }, signature),
      transferCall(auth, await sign(auth, outsiderKey)),
      { to: conn.tokenAddress, data: malleable },
      transferCall(expired, await sign(expired)),
      transferCall(early, await sign(early)),
    ];
    for (const call of refused) {
      expect((await sendAs(conn, relayer.privateKey, call)).status).toBe('reverted');
    }
    expect(await readTokenBalance(conn, auth.to)).toBe(0n);
    expect(await used(payer.address, auth.nonce)).toBe(false);
    // Names x402's facilitator maps to its reasons (parseEip3009TransferError).
    const simulate = async (a: Authorization, sig: Hex): Promise<string> => {
      const { r, s: sigS, v } = parseSignature(sig);
      return conn.publicClient
        .simulateContract({
          account: relayer.address as Address,
          address: conn.tokenAddress,
          abi: plainUsdAbi,
          functionName: 'transferWithAuthorization',
          args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, Number(v), r, sigS],
        })
        .then(
          () => 'ok',
          (e: Error) => e.message,
        );
    };
    expect(await simulate(expired, await sign(expired))).toMatch(/AuthorizationExpired/);
    expect(await simulate(early, await sign(early))).toMatch(/AuthorizationNotYetValid/);
    expect(await simulate(auth, await sign(auth, outsiderKey))).toMatch(/InvalidSignature/);
  });

  it('refuses an authorization whose payer lacks the funds, and leaves its nonce usable', async () => {
    const auth = await authorization({ value: 10n ** 12n });
    const signature = await sign(auth);
    expect((await sendAs(conn, relayer.privateKey, transferCall(auth, signature))).status).toBe('reverted');
    expect(await used(payer.address, auth.nonce)).toBe(false);
  });

  it('receiveWithAuthorization is submitted only by the payee', async () => {
    const payee = privateKeyToAccount(outsider.privateKey);
    const auth = await authorization({ to: payee.address });
    const signature = await payer.signTypedData({
      domain: domain(),
      types: receiveTypes,
      primaryType: 'ReceiveWithAuthorization',
      message: auth,
    });
    const data = encodeFunctionData({
      abi: plainUsdAbi,
      functionName: 'receiveWithAuthorization',
      args: [auth.from, auth.to, auth.value, auth.validAfter, auth.validBefore, auth.nonce, signature],
    });
    const before = await readTokenBalance(conn, payee.address);
    expect((await sendAs(conn, relayer.privateKey, { to: conn.tokenAddress, data })).status).toBe('reverted');
    expect((await sendAs(conn, outsider.privateKey, { to: conn.tokenAddress, data })).status).toBe('success');
    expect(await readTokenBalance(conn, payee.address)).toBe(before + auth.value);
    // A transfer authorization's signature does not pass as a receive authorization (other type hash).
    const other = await authorization({ to: payee.address });
    const asTransfer = await sign(other);
    const wrongType = encodeFunctionData({
      abi: plainUsdAbi,
      functionName: 'receiveWithAuthorization',
      args: [other.from, other.to, other.value, other.validAfter, other.validBefore, other.nonce, asTransfer],
    });
    expect((await sendAs(conn, outsider.privateKey, { to: conn.tokenAddress, data: wrongType })).status).toBe(
      'reverted',
    );
  });

  it('cancelAuthorization spends an unused nonce so the authorization can never pay', async () => {
    const auth = await authorization();
    const signature = await sign(auth);
    const cancel = await payer.signTypedData({
      domain: domain(),
      types: cancelTypes,
      primaryType: 'CancelAuthorization',
      message: { authorizer: payer.address, nonce: auth.nonce },
    });
    const data = encodeFunctionData({
      abi: plainUsdAbi,
      functionName: 'cancelAuthorization',
      args: [payer.address, auth.nonce, cancel],
    });
    const receipt = await sendAs(conn, relayer.privateKey, { to: conn.tokenAddress, data });
    expect(receipt.status).toBe('success');
    expect(parseEventLogs({ abi: plainUsdAbi, eventName: 'AuthorizationCanceled', logs: receipt.logs })).toHaveLength(
      1,
    );
    expect(await used(payer.address, auth.nonce)).toBe(true);
    expect((await sendAs(conn, relayer.privateKey, transferCall(auth, signature))).status).toBe('reverted');
    expect((await sendAs(conn, relayer.privateKey, { to: conn.tokenAddress, data })).status).toBe('reverted');
  });
});
