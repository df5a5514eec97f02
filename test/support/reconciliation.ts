// Test support for the daily reconciliation (docs/reconciliation.md): Daraja's Pull registration,
// a logger whose lines a test reads, and moving the treasury's tokens as its owner can.

import { Writable } from 'node:stream';
import { encodeFunctionData } from 'viem';
import { type ChainConnection, readTreasuryBalance } from '../../src/chain/chain.ts';
import { batchPayoutAbi, plainUsdAbi } from '../../src/chain/contracts/abis.ts';
import { DEV_ACCOUNTS } from '../../src/chain/devnet.ts';
import { sendAs } from '../../src/chain/testing.ts';
import { createLogger, type Logger } from '../../src/core/logger.ts';
import type { FakeDaraja } from '../fakes/daraja.ts';
import type { MPESA_APP } from '../fakes/credentials.ts';

/**
 * The operator's one-time Register Pull for the shortcode (Daraja's Pull page): plainpay itself
 * only queries. With the app's own token, as the operator would call it.
 */
export async function registerPull(daraja: FakeDaraja, app: typeof MPESA_APP): Promise<void> {
  const basic = Buffer.from(`${app.consumer_key}:${app.consumer_secret}`).toString('base64');
  const token = await fetch(`${daraja.baseUrl}/oauth/v1/generate?grant_type=client_credentials`, {
    headers: { authorization: `Basic ${basic}` },
  });
  const { access_token } = (await token.json()) as { access_token: string };
  const res = await fetch(`${daraja.baseUrl}/pulltransactions/v1/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${access_token}` },
    body: JSON.stringify({
      ShortCode: app.shortcode,
      RequestType: 'Pull',
      NominatedNumber: '0722000000',
      CallBackURL: 'https://operator.example/pull',
    }),
  });
  const answer = (await res.json()) as { ResponseStatus?: string };
  if (answer.ResponseStatus !== '1000' && answer.ResponseStatus !== '1001') {
    throw new Error(`Register Pull failed: ${JSON.stringify(answer)}`);
  }
}

/** A logger that keeps every line it writes, parsed, for a test to read. */
export function capturingLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString('utf8').split('\n')) if (text.trim()) lines.push(JSON.parse(text));
      done();
    },
  });
  return { logger: createLogger('info', sink), lines };
}

/** The UTC day (YYYY-MM-DD) an instant falls in. */
export function dayOf(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/**
 * Takes all but `leave` of the treasury's tokens out, as its owner (the deployer) can; returns how
 * many to put back with refillTreasury.
 */
export async function drainTreasury(conn: ChainConnection, leave: bigint): Promise<bigint> {
  const amount = (await readTreasuryBalance(conn)) - leave;
  const withdraw = encodeFunctionData({
    abi: batchPayoutAbi,
    functionName: 'withdraw',
    args: [conn.tokenAddress, DEV_ACCOUNTS.deployer.address, amount],
  });
  const receipt = await sendAs(conn, DEV_ACCOUNTS.deployer.privateKey, { to: conn.batchAddress, data: withdraw });
  if (receipt.status !== 'success') throw new Error('the treasury withdrawal reverted');
  return amount;
}

/** Puts tokens taken out by drainTreasury back into the treasury. */
export async function refillTreasury(conn: ChainConnection, amount: bigint): Promise<void> {
  const transfer = encodeFunctionData({
    abi: plainUsdAbi,
    functionName: 'transfer',
    args: [conn.batchAddress, amount],
  });
  const receipt = await sendAs(conn, DEV_ACCOUNTS.deployer.privateKey, { to: conn.tokenAddress, data: transfer });
  if (receipt.status !== 'success') throw new Error('the treasury refill reverted');
}
