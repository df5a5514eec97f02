// Verification of an x402 `exact` EVM payment: an EIP-3009 TransferWithAuthorization signed by the
// payer, checked against the requirements and against the chain, without moving anything.
//
// The checks follow x402 v2 (specs/x402-specification-v2.md 6.1.2 and the exact EVM scheme): the
// signature by the payer, the recipient, the time window, the amount, the nonce unused, the balance,
// then a simulation of the transfer as the relayer would submit it. Their order, and the margin of
// a few seconds on validBefore, follow x402's reference facilitator (@x402/evm 2.27
// `exact/facilitator/eip3009.ts`), so plainpay refuses what it refuses, with the spec's codes.
//
// Time: the contract compares validAfter/validBefore with the timestamp of the block the transfer
// lands in. That block is still to come: stamped no earlier than the newest block and about now,
// so the later of the newest block's time and the service's clock stands for it at both ends of
// the window. The newest block alone is not enough: an idle automine devnet mines no block until a
// transaction comes, so its newest block can be hours old, which would pass a payload already
// expired and refuse one signed a minute ago (validAfter after that block). The simulation runs on
// the pending block for the same reason.

import {
  type Address,
  BaseError,
  decodeErrorResult,
  encodeFunctionData,
  getAddress,
  type Hex,
  isAddressEqual,
  parseSignature,
  verifyTypedData,
} from 'viem';
import type { ChainConnection } from '../chain/chain.ts';
import { plainUsdAbi } from '../chain/contracts/abis.ts';
import {
  caip2,
  type ExactEvmPayload,
  exactEvmPayload,
  type PaymentPayload,
  type PaymentRequirements,
  paymentPayload,
  paymentRequirements,
  X402_REASONS,
  X402_VERSION,
  type X402Reason,
} from './messages.ts';

/** The EIP-712 types of EIP-3009's TransferWithAuthorization (as USDC's FiatTokenV2 hashes them). */
export const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

/**
 * An authorization must stay valid this long after now (the later of the newest block's time and
 * the service's clock), so the transaction that submits it can still be mined (the reference
 * facilitator's margin).
 */
export const VALID_BEFORE_MARGIN_SECONDS = 6n;

/**
 * An authorization may stay valid at most this long beyond now + the requirements'
 * maxTimeoutSeconds (clock skew, a client's rounding). A longer one is refused: a signed
 * authorization can move money until validBefore, whoever submits it, so plainpay keeps that
 * window short; and it keeps validBefore inside the database's bigint.
 */
export const VALID_BEFORE_SLACK_SECONDS = 60n;

/** The largest amount plainpay records (Postgres bigint); the token's uint256 allows far more. */
export const MAX_VALUE_MINOR = 2n ** 63n - 1n;

/** Where and how plainpay accepts x402 payments: its chain, token, treasury and the token's EIP-712 domain. */
export interface X402Target {
  chainId: number;
  network: string;
  asset: Address;
  /** The treasury (BatchPayout's token balance): authorizations pay to it, plainpay credits the merchant. */
  payTo: Address;
  name: string;
  version: string;
  decimals: number;
  /** The relayer, which submits authorizations and pays their gas. */
  relayer: Address;
}

const targets = new WeakMap<ChainConnection, Promise<X402Target>>();

/** The target on this connection; the token's EIP-712 name and version are read from it once. */
export function x402Target(conn: ChainConnection): Promise<X402Target> {
  let target = targets.get(conn);
  if (!target) {
    target = readTarget(conn);
    targets.set(conn, target);
    target.catch(() => targets.delete(conn));
  }
  return target;
}

async function readTarget(conn: ChainConnection): Promise<X402Target> {
  const [name, version] = await Promise.all([
    conn.publicClient.readContract({ address: conn.tokenAddress, abi: plainUsdAbi, functionName: 'name' }),
    conn.publicClient.readContract({ address: conn.tokenAddress, abi: plainUsdAbi, functionName: 'version' }),
  ]);
  return {
    chainId: conn.chainId,
    network: caip2(conn.chainId),
    asset: getAddress(conn.tokenAddress),
    payTo: getAddress(conn.batchAddress),
    name,
    version,
    decimals: conn.tokenDecimals,
    relayer: conn.relayer.address,
  };
}

/** An EIP-3009 authorization with its numbers read. */
export interface Authorization {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}

export type ExactVerification =
  | {
      ok: true;
      payer: Address;
      authorization: Authorization;
      signature: Hex;
      payload: PaymentPayload;
      requirements: PaymentRequirements;
    }
  | { ok: false; reason: X402Reason; message: string; payer?: string };

function refuse(reason: X402Reason, message: string, payer?: string): ExactVerification {
  return payer === undefined ? { ok: false, reason, message } : { ok: false, reason, message, payer };
}

/**
 * Verifies a payment payload against requirements for settlement on `conn`. Reads the chain (block
 * time, nonce state, balance, a simulated call); writes nothing. `serviceNow` is the service's
 * clock, checked alongside the newest block's time (see the header).
 */
export async function verifyExactPayment(
  conn: ChainConnection,
  input: { paymentPayload: unknown; paymentRequirements: unknown },
  serviceNow: Date,
): Promise<ExactVerification> {
  const target = await x402Target(conn);
  const requirements = paymentRequirements.safeParse(input.paymentRequirements);
  if (!requirements.success) {
    return refuse(X402_REASONS.requirements, `paymentRequirements: ${firstIssue(requirements.error)}`);
  }
  const payload = paymentPayload.safeParse(input.paymentPayload);
  if (!payload.success) return refuse(X402_REASONS.payload, `paymentPayload: ${firstIssue(payload.error)}`);
  const exact = exactEvmPayload.safeParse(payload.data.payload);
  const payer = exact.success ? getAddress(exact.data.authorization.from) : undefined;
  if (payload.data.x402Version !== X402_VERSION) {
    return refuse(
      X402_REASONS.version,
      `x402Version ${payload.data.x402Version} is not supported: plainpay speaks 2`,
      payer,
    );
  }
  const problem = checkRequirements(requirements.data, payload.data, target);
  if (problem) return { ...problem, ...(payer ? { payer } : {}) };
  if (!exact.success) return refuse(X402_REASONS.payload, `paymentPayload.payload: ${firstIssue(exact.error)}`);
  const authorization = readAuthorization(exact.data);
  const signature = exact.data.signature as Hex;
  const checked = await checkAuthorization(conn, target, requirements.data, authorization, signature, serviceNow);
  if (checked) return { ...checked, payer: authorization.from };
  return {
    ok: true,
    payer: authorization.from,
    authorization,
    signature,
    payload: payload.data,
    requirements: requirements.data,
  };
}

/** Requirements plainpay can settle: exact, on its chain, in its token, to its treasury, in the token's domain. */
function checkRequirements(
  requirements: PaymentRequirements,
  payload: PaymentPayload,
  target: X402Target,
): { ok: false; reason: X402Reason; message: string } | undefined {
  if (requirements.scheme !== 'exact' || payload.accepted.scheme !== 'exact') {
    return { ok: false, reason: X402_REASONS.scheme, message: 'plainpay settles the "exact" scheme only' };
  }
  if (requirements.network !== target.network || payload.accepted.network !== requirements.network) {
    return {
      ok: false,
      reason: X402_REASONS.network,
      message: `plainpay settles on ${target.network}; the payment names ${payload.accepted.network} (requirements: ${requirements.network})`,
    };
  }
  if (!isAddressEqual(requirements.asset as Address, target.asset)) {
    return {
      ok: false,
      reason: X402_REASONS.requirements,
      message: `the asset must be ${target.asset} (GET /x402/supported), not ${requirements.asset}`,
    };
  }
  if (!isAddressEqual(requirements.payTo as Address, target.payTo)) {
    return {
      ok: false,
      reason: X402_REASONS.requirements,
      message: `payTo must be plainpay's treasury ${target.payTo} (GET /x402/supported): money paid elsewhere cannot be credited to the merchant`,
    };
  }
  const extra = requirements.extra ?? {};
  if (extra.name !== target.name || extra.version !== target.version) {
    return {
      ok: false,
      reason: X402_REASONS.requirements,
      message: `extra.name and extra.version must be the token's EIP-712 domain: "${target.name}", "${target.version}"`,
    };
  }
  if (BigInt(requirements.amount) <= 0n) {
    return { ok: false, reason: X402_REASONS.requirements, message: 'amount must be positive' };
  }
  return undefined;
}

function readAuthorization(payload: ExactEvmPayload): Authorization {
  const a = payload.authorization;
  return {
    from: getAddress(a.from),
    to: getAddress(a.to),
    value: BigInt(a.value),
    validAfter: BigInt(a.validAfter),
    validBefore: BigInt(a.validBefore),
    nonce: a.nonce.toLowerCase() as Hex,
  };
}

type Refusal = { ok: false; reason: X402Reason; message: string };

async function checkAuthorization(
  conn: ChainConnection,
  target: X402Target,
  requirements: PaymentRequirements,
  auth: Authorization,
  signature: Hex,
  serviceNow: Date,
): Promise<Refusal | undefined> {
  const no = (reason: X402Reason, message: string): Refusal => ({ ok: false, reason, message });
  if (!(await signedByPayer(conn, target, auth, signature))) {
    return no(X402_REASONS.signature, `the signature is not ${auth.from}'s over this authorization`);
  }
  if (!isAddressEqual(auth.to, getAddress(requirements.payTo))) {
    return no(
      X402_REASONS.recipientMismatch,
      `the authorization pays ${auth.to}, the requirements ${requirements.payTo}`,
    );
  }
  const chainNow = (await conn.publicClient.getBlock({ blockTag: 'latest' })).timestamp;
  const clockNow = BigInt(Math.floor(serviceNow.getTime() / 1000));
  // The transfer lands in a block still to come, stamped no earlier than the newest block and about
  // now: the later of the two clocks is when it lands, for both ends of the window.
  const landing = chainNow > clockNow ? chainNow : clockNow;
  const times = `chain time ${chainNow}, service time ${clockNow}`;
  if (auth.validBefore < landing + VALID_BEFORE_MARGIN_SECONDS) {
    return no(X402_REASONS.validBefore, `the authorization expired (validBefore ${auth.validBefore}, ${times})`);
  }
  if (auth.validAfter >= landing) {
    return no(X402_REASONS.validAfter, `the authorization is not valid yet (validAfter ${auth.validAfter}, ${times})`);
  }
  const latest = landing + BigInt(requirements.maxTimeoutSeconds) + VALID_BEFORE_SLACK_SECONDS;
  if (auth.validBefore > latest) {
    return no(
      X402_REASONS.validBefore,
      `validBefore ${auth.validBefore} is too far ahead: at most ${latest} (now + maxTimeoutSeconds ${requirements.maxTimeoutSeconds} + ${VALID_BEFORE_SLACK_SECONDS} s; ${times})`,
    );
  }
  const required = BigInt(requirements.amount);
  if (auth.value > MAX_VALUE_MINOR) {
    return no(X402_REASONS.value, `the authorization is for ${auth.value} atomic units; at most ${MAX_VALUE_MINOR}`);
  }
  if (auth.value !== required) {
    return no(
      X402_REASONS.value,
      `the authorization is for ${auth.value} atomic units; the requirements ask exactly ${required}`,
    );
  }
  const [used, balance] = await Promise.all([
    conn.publicClient.readContract({
      address: target.asset,
      abi: plainUsdAbi,
      functionName: 'authorizationState',
      args: [auth.from, auth.nonce],
    }),
    conn.publicClient.readContract({
      address: target.asset,
      abi: plainUsdAbi,
      functionName: 'balanceOf',
      args: [auth.from],
    }),
  ]);
  if (used) return no(X402_REASONS.nonceUsed, `nonce ${auth.nonce} of ${auth.from} was already used or canceled`);
  if (balance < auth.value) {
    return no(X402_REASONS.insufficientFunds, `${auth.from} holds ${balance} atomic units; ${auth.value} are needed`);
  }
  const simulated = await simulateTransfer(conn, target, auth, signature);
  return simulated === undefined ? undefined : no(simulated.reason, simulated.message);
}

async function signedByPayer(
  conn: ChainConnection,
  target: X402Target,
  auth: Authorization,
  signature: Hex,
): Promise<boolean> {
  const typed = {
    domain: { name: target.name, version: target.version, chainId: target.chainId, verifyingContract: target.asset },
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: 'TransferWithAuthorization' as const,
    message: { ...auth },
  };
  try {
    const code = await conn.publicClient.getCode({ address: auth.from });
    // A contract wallet answers for itself (ERC-1271), as the token will ask it.
    if (code && code !== '0x') {
      return await conn.publicClient.verifyTypedData({
        address: auth.from,
        signature,
        domain: typed.domain,
        types: typed.types,
        primaryType: typed.primaryType,
        message: typed.message,
        blockTag: 'latest',
      });
    }
    return await verifyTypedData({ address: auth.from, signature, ...typed });
  } catch {
    return false; // an unreadable signature is no signature of the payer's
  }
}

/** The transfer as the relayer would submit it, run without sending; undefined when it would succeed. */
export async function simulateTransfer(
  conn: ChainConnection,
  target: X402Target,
  auth: Authorization,
  signature: Hex,
): Promise<{ reason: X402Reason; message: string } | undefined> {
  try {
    await conn.publicClient.call({
      // In the block it would land in: on an idle chain the newest block can be older than the
      // authorization's validAfter, the next one is not.
      blockTag: 'pending',
      account: target.relayer,
      to: target.asset,
      data: transferWithAuthorizationData(auth, signature),
    });
    return undefined;
  } catch (error) {
    return { reason: reasonOfRevert(error), message: `the transfer would fail: ${revertText(error)}` };
  }
}

/**
 * Calldata of transferWithAuthorization: the v, r, s overload for a 65-byte signature (every USDC
 * version has it), the packed-bytes overload (FiatTokenV2_2) for a contract wallet's.
 */
export function transferWithAuthorizationData(auth: Authorization, signature: Hex): Hex {
  const base = [auth.from, auth.to, auth.value, auth.validAfter, auth.validBefore, auth.nonce] as const;
  if (signature.length === 132) {
    const { r, s, v, yParity } = parseSignature(signature);
    return encodeFunctionData({
      abi: plainUsdAbi,
      functionName: 'transferWithAuthorization',
      args: [...base, Number(v ?? BigInt(yParity + 27)), r, s],
    });
  }
  return encodeFunctionData({
    abi: plainUsdAbi,
    functionName: 'transferWithAuthorization',
    args: [...base, signature],
  });
}

/** A revert's reason, by the token's error name (PlainUSD) or message (USDC's FiatTokenV2 strings). */
function reasonOfRevert(error: unknown): X402Reason {
  const text = revertText(error);
  if (/AuthorizationExpired|authorization is expired/i.test(text)) return X402_REASONS.validBefore;
  if (/AuthorizationNotYetValid|authorization is not yet valid/i.test(text)) return X402_REASONS.validAfter;
  if (/AuthorizationUsedOrCanceled|authorization is used or canceled/i.test(text)) return X402_REASONS.nonceUsed;
  if (/InsufficientBalance|exceeds balance/i.test(text)) return X402_REASONS.insufficientFunds;
  if (/InvalidSignature|invalid signature/i.test(text)) return X402_REASONS.signature;
  return X402_REASONS.transactionState;
}

/** The revert decoded by the token's ABI when it carries data (a custom error), else the node's message. */
function revertText(error: unknown): string {
  if (error instanceof BaseError) {
    const withData = error.walk((e) => typeof (e as { data?: unknown }).data === 'string') as { data?: Hex } | null;
    if (withData?.data && withData.data.length >= 10) {
      try {
        const decoded = decodeErrorResult({ abi: plainUsdAbi, data: withData.data });
        return `${decoded.errorName}(${(decoded.args ?? []).map(String).join(', ')})`;
      } catch {
        // not one of PlainUSD's errors: the message says it (USDC's require strings)
      }
    }
  }
  return shortMessage(error);
}

function shortMessage(error: unknown): string {
  if (error instanceof BaseError) return error.shortMessage;
  return error instanceof Error ? error.message : String(error);
}

function firstIssue(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  const path = issue.path.map(String).join('.');
  return path ? `${path}: ${issue.message}` : issue.message;
}
