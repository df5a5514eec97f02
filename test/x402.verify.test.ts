// plainpay as an x402 v2 facilitator: GET /x402/supported and POST /x402/verify on the embedded
// devnet. Payloads are made by the ecosystem's own client (@x402/core's x402Client with
// @x402/evm's ExactEvmScheme and a viem account), and the interface is driven by @x402/core's
// HTTPFacilitatorClient, the one @x402/express uses; refusals carry the specification's reasons
// (x402 v2, section 9) and move nothing.

import { HTTPFacilitatorClient } from '@x402/core/http';
import { x402Client } from '@x402/core/client';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import type { FastifyInstance } from 'fastify';
import { type Address, encodeFunctionData, type Hex, keccak256, toHex } from 'viem';
import { type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain, readTokenBalance, readTreasuryBalance } from '../src/chain/chain.ts';
import { plainUsdAbi } from '../src/chain/contracts/abis.ts';
import { DEV_ACCOUNTS } from '../src/chain/devnet.ts';
import type { ManualClock } from '../src/core/clock.ts';
import { freshAddresses, sendAs } from '../src/chain/testing.ts';
import type { Runtime } from '../src/runtime.ts';
import type { SupportedResponse, VerifyResponse } from '../src/x402/messages.ts';
import { transferWithAuthorizationData } from '../src/x402/verify-exact.ts';
import { bearer, type TestAccount, testAccount, testApp } from './support/harness.ts';
import { settlementRuntime } from './support/settlement.ts';

let chain: ChainConnection;
let runtime: Runtime & { clock: ManualClock };
let app: FastifyInstance;
let merchant: TestAccount;
let supported: SupportedResponse;
const payer = privateKeyToAccount(keccak256(toHex('x402 verify payer')));
const AMOUNT = 1_500_000n; // 1.50 USDC

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain);
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
  const mint = encodeFunctionData({ abi: plainUsdAbi, functionName: 'mint', args: [payer.address, 100_000_000n] });
  await sendAs(chain, DEV_ACCOUNTS.deployer.privateKey, { to: chain.tokenAddress, data: mint });
  const answer = await app.inject({ method: 'GET', url: '/x402/supported', headers: bearer(merchant.apiKey) });
  expect(answer.statusCode).toBe(200);
  supported = answer.json();
});
afterAll(async () => {
  await chain?.close();
});

/** Requirements as a merchant's middleware builds them from GET /x402/supported. */
function requirements(over: Partial<PaymentRequirements> = {}): PaymentRequirements {
  const kind = supported.kinds[0]!;
  return {
    scheme: 'exact',
    network: kind.network as PaymentRequirements['network'],
    amount: AMOUNT.toString(),
    asset: kind.extra.asset,
    payTo: kind.extra.payTo,
    maxTimeoutSeconds: 60,
    extra: { name: kind.extra.name, version: kind.extra.version },
    ...over,
  };
}

/** What an agent's x402 client signs for these requirements. */
async function clientPayload(account: PrivateKeyAccount, accepted: PaymentRequirements): Promise<PaymentPayload> {
  // The devnet's token is not one of the client's default assets: an agent allows it explicitly.
  const client = x402Client.fromConfig({
    schemes: [{ network: 'eip155:*', client: new ExactEvmScheme(account) }],
    spendControls: { allowedAssets: [{ network: accepted.network, asset: accepted.asset }] },
  });
  return await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: 'https://merchant.example/report', description: 'A report', mimeType: 'application/json' },
    accepts: [accepted],
  });
}

/** An authorization signed by hand, for windows the client never makes (expired, not yet valid). */
async function handSigned(window: { validAfter: bigint; validBefore: bigint }): Promise<PaymentPayload> {
  const accepted = requirements();
  const authorization = {
    from: payer.address,
    to: accepted.payTo as Address,
    value: AMOUNT,
    ...window,
    nonce: keccak256(toHex(`hand ${Math.random()}`)),
  };
  const signature = await payer.signTypedData({
    domain: {
      name: supported.kinds[0]!.extra.name,
      version: supported.kinds[0]!.extra.version,
      chainId: chain.chainId,
      verifyingContract: accepted.asset as Address,
    },
    types: {
      TransferWithAuthorization: [
        { name: 'from', type: 'address' },
        { name: 'to', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'validAfter', type: 'uint256' },
        { name: 'validBefore', type: 'uint256' },
        { name: 'nonce', type: 'bytes32' },
      ],
    },
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  });
  return {
    x402Version: 2,
    accepted,
    payload: {
      signature,
      authorization: {
        ...authorization,
        value: String(authorization.value),
        validAfter: String(authorization.validAfter),
        validBefore: String(authorization.validBefore),
      },
    },
  };
}

async function verify(payload: unknown, reqs: PaymentRequirements = requirements()): Promise<VerifyResponse> {
  const answer = await app.inject({
    method: 'POST',
    url: '/x402/verify',
    headers: bearer(merchant.apiKey),
    payload: { x402Version: 2, paymentPayload: payload, paymentRequirements: reqs },
  });
  expect(answer.statusCode).toBe(200);
  return answer.json();
}

async function chainNow(): Promise<bigint> {
  return (await chain.publicClient.getBlock()).timestamp;
}

describe('GET /x402/supported', () => {
  it("names exact on the chain's CAIP-2 network, the token and its EIP-712 domain, the treasury as payTo, the relayer", () => {
    expect(supported).toEqual({
      kinds: [
        {
          x402Version: 2,
          scheme: 'exact',
          network: `eip155:${chain.chainId}`,
          extra: {
            asset: chain.tokenAddress,
            payTo: chain.batchAddress,
            name: 'Plain USD',
            version: '2',
            decimals: 6,
          },
        },
      ],
      extensions: [],
      signers: { 'eip155:*': [chain.relayer.address] },
    });
  });

  it('needs an API key', async () => {
    const answer = await app.inject({ method: 'GET', url: '/x402/supported' });
    expect(answer.statusCode).toBe(401);
    const verifyAnswer = await app.inject({ method: 'POST', url: '/x402/verify', payload: {} });
    expect(verifyAnswer.statusCode).toBe(401);
  });
});

describe('POST /x402/verify', () => {
  it("accepts what the ecosystem's client signs, and moves nothing", async () => {
    const before = await readTokenBalance(chain, payer.address);
    const treasury = await readTreasuryBalance(chain);
    expect(await verify(await clientPayload(payer, requirements()))).toEqual({ isValid: true, payer: payer.address });
    expect(await readTokenBalance(chain, payer.address)).toBe(before);
    expect(await readTreasuryBalance(chain)).toBe(treasury);
  });

  it('answers through @x402/core HTTPFacilitatorClient, as the middleware calls it', async () => {
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const auth = { Authorization: `Bearer ${merchant.apiKey}` };
    const facilitator = new HTTPFacilitatorClient({
      url: `${url}/x402`,
      createAuthHeaders: async () => ({ verify: auth, settle: auth, supported: auth }),
    });
    const kinds = await facilitator.getSupported();
    expect(kinds.kinds[0]).toMatchObject({ x402Version: 2, scheme: 'exact', network: `eip155:${chain.chainId}` });
    const payload = await clientPayload(payer, requirements());
    expect(await facilitator.verify(payload, requirements())).toMatchObject({ isValid: true, payer: payer.address });
    const short = await facilitator.verify(payload, requirements({ amount: String(AMOUNT + 1n) }));
    expect(short).toMatchObject({ isValid: false, invalidReason: 'invalid_exact_evm_payload_authorization_value' });
  });

  describe('refusals: the specification reason, nothing moved', () => {
    it('a signature by another key', async () => {
      const other = privateKeyToAccount(DEV_ACCOUNTS.outsider.privateKey);
      const forged = await clientPayload(other, requirements());
      const payload = forged.payload as { authorization: { from: string } };
      payload.authorization.from = payer.address; // claims the payer's money with the outsider's signature
      expect(await verify(forged)).toMatchObject({
        isValid: false,
        invalidReason: 'invalid_exact_evm_payload_signature',
        payer: payer.address,
      });
    });

    it('an amount short of the requirements', async () => {
      const short = await clientPayload(payer, requirements({ amount: String(AMOUNT - 1n) }));
      expect(await verify(short)).toMatchObject({
        isValid: false,
        invalidReason: 'invalid_exact_evm_payload_authorization_value',
      });
    });

    it('a recipient other than payTo', async () => {
      const [elsewhere] = freshAddresses('x402 wrong recipient', 1) as [Address];
      const wrong = await clientPayload(payer, requirements({ payTo: elsewhere }));
      expect(await verify(wrong)).toMatchObject({
        isValid: false,
        invalidReason: 'invalid_exact_evm_payload_recipient_mismatch',
      });
    });

    it('expired, and about to expire before a transaction could land', async () => {
      const now = await chainNow();
      for (const validBefore of [now - 1n, now + 2n]) {
        expect(await verify(await handSigned({ validAfter: 0n, validBefore }))).toMatchObject({
          isValid: false,
          invalidReason: 'invalid_exact_evm_payload_authorization_valid_before',
        });
      }
    });

    it('not yet valid', async () => {
      const now = await chainNow();
      expect(await verify(await handSigned({ validAfter: now + 3_600n, validBefore: now + 7_200n }))).toMatchObject({
        isValid: false,
        invalidReason: 'invalid_exact_evm_payload_authorization_valid_after',
      });
    });

    it("expired by the service's clock while the newest block is stale (an idle devnet)", async () => {
      const now = await chainNow();
      // Valid for 90 s by the newest block; the service's clock is an hour past it.
      const payload = await handSigned({ validAfter: 0n, validBefore: now + 90n });
      runtime.clock.advance(3_600_000);
      try {
        expect(await verify(payload)).toMatchObject({
          isValid: false,
          invalidReason: 'invalid_exact_evm_payload_authorization_valid_before',
        });
      } finally {
        runtime.clock.advance(-3_600_000);
      }
      expect(await verify(payload)).toEqual({ isValid: true, payer: payer.address });
    });

    it("valid from the newest block on, though the service's clock is behind it: the transfer lands after that block", async () => {
      const now = await chainNow();
      const payload = await handSigned({ validAfter: now - 60n, validBefore: now + 90n });
      runtime.clock.advance(-3_600_000); // the service's clock an hour behind the chain's
      try {
        expect(await verify(payload)).toEqual({ isValid: true, payer: payer.address });
      } finally {
        runtime.clock.advance(3_600_000);
      }
    });

    it('a nonce already used on chain (a replay)', async () => {
      const payload = await clientPayload(payer, requirements());
      const { signature, authorization: a } = payload.payload as {
        signature: Hex;
        authorization: {
          from: Address;
          to: Address;
          value: string;
          validAfter: string;
          validBefore: string;
          nonce: Hex;
        };
      };
      const data = transferWithAuthorizationData(
        {
          from: a.from,
          to: a.to,
          value: BigInt(a.value),
          validAfter: BigInt(a.validAfter),
          validBefore: BigInt(a.validBefore),
          nonce: a.nonce,
        },
        signature,
      );
      expect((await sendAs(chain, DEV_ACCOUNTS.outsider.privateKey, { to: chain.tokenAddress, data })).status).toBe(
        'success',
      );
      const after = await readTokenBalance(chain, payer.address);
      expect(await verify(payload)).toMatchObject({
        isValid: false,
        invalidReason: 'invalid_exact_evm_nonce_already_used',
      });
      expect(await readTokenBalance(chain, payer.address)).toBe(after);
    });

    it('a payer without the funds', async () => {
      const poor = privateKeyToAccount(keccak256(toHex('x402 poor payer')));
      expect(await verify(await clientPayload(poor, requirements()))).toMatchObject({
        isValid: false,
        invalidReason: 'insufficient_funds',
        payer: poor.address,
      });
    });

    it('a live key on a test network, whose token anyone with the public deployer key can mint', async () => {
      const live = await testAccount(runtime, { livemode: true, name: 'Live merchant' });
      // Supported answers as verify does: no kind this key could be paid in here.
      const kinds = await app.inject({ method: 'GET', url: '/x402/supported', headers: bearer(live.apiKey) });
      expect(kinds.json()).toMatchObject({ kinds: [], extensions: [] });
      const answer = await app.inject({
        method: 'POST',
        url: '/x402/verify',
        headers: bearer(live.apiKey),
        payload: {
          x402Version: 2,
          paymentPayload: await clientPayload(payer, requirements()),
          paymentRequirements: requirements(),
        },
      });
      expect(answer.statusCode).toBe(200);
      const body = answer.json() as VerifyResponse & { invalidMessage?: string };
      expect(body).toMatchObject({ isValid: false, invalidReason: 'invalid_network' });
      expect(body.invalidMessage).toMatch(/live key .* test network/);
    });

    it('requirements plainpay cannot settle: another payTo, asset, network, scheme; a malformed payload', async () => {
      const payload = await clientPayload(payer, requirements());
      const [elsewhere] = freshAddresses('x402 not the treasury', 1) as [Address];
      expect(await verify(payload, requirements({ payTo: elsewhere }))).toMatchObject({
        isValid: false,
        invalidReason: 'invalid_payment_requirements',
      });
      expect(await verify(payload, requirements({ asset: elsewhere }))).toMatchObject({
        isValid: false,
        invalidReason: 'invalid_payment_requirements',
      });
      expect(await verify(payload, requirements({ network: 'eip155:8453' }))).toMatchObject({
        isValid: false,
        invalidReason: 'invalid_network',
      });
      expect(await verify(payload, requirements({ scheme: 'upto' }))).toMatchObject({
        isValid: false,
        invalidReason: 'unsupported_scheme',
      });
      expect(await verify({ ...payload, x402Version: 1 })).toMatchObject({
        isValid: false,
        invalidReason: 'invalid_x402_version',
      });
      expect(await verify({ ...payload, payload: { signature: '0x12' } })).toMatchObject({
        isValid: false,
        invalidReason: 'invalid_payload',
      });
    });
  });
});
