// Chaos: the node behind CHAIN_RPC_URL restarts serving a new chain (issue 17, row 4): same URL (a
// proxy the test re-points from the old node to the new one), same chain id, same contract
// addresses, another genesis, the relayer's nonce back at 0. The
// worker must notice, refuse to sign or broadcast (error log, metric, readiness not ready) instead
// of handing out nonces the new chain has never seen, and resume safely once the operator runs
// `plainpay chain adopt`.

import { describe, expect, it } from 'vitest';
import { chainAdopt } from '../../src/cli/chain.ts';
import type { CliOutput } from '../../src/cli/command.ts';
import { systemClock } from '../../src/core/clock.ts';
import { chainReadiness } from '../../src/settlement/chain-health.ts';
import type { Runtime } from '../../src/runtime.ts';
import { identifyChain } from '../../src/settlement/chain-session.ts';
import { testAccount, testApp } from '../support/harness.ts';
import { payoutAddresses } from '../support/settlement.ts';
import { createPaidPayments } from '../support/settlement-fixtures.ts';
import {
  chaosRuntime,
  chaosWorker,
  connectNode,
  devnetNode,
  expectPaidExactlyOnce,
  freezableProxy,
  metricValue,
  waitFor,
} from './support/chain.ts';

async function runCli(runtime: Runtime, args: string[]): Promise<{ code: number; stdout: string[]; stderr: string[] }> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const out: CliOutput = { stdout: (l) => stdout.push(l), stderr: (l) => stderr.push(l) };
  const work = chainAdopt.parse(args);
  const code = await work(
    {
      db: runtime.db,
      clock: systemClock,
      secretBox: undefined as never,
      config: undefined as never,
      runtime: async () => runtime,
    },
    out,
  );
  return { code, stdout, stderr };
}

describe('chaos: the node restarts with a new chain', () => {
  it('refuses to sign for the new chain until `plainpay chain adopt`, then settles every payment once', async () => {
    const first = await devnetNode({ initialDate: new Date('2025-01-01T00:00:00Z') });
    const endpoint = await freezableProxy(first.url);
    const chain = await connectNode(endpoint.url, first, { confirmations: 1 });
    const { runtime, logs } = await chaosRuntime(chain);
    const merchant = await testAccount(runtime);
    const worker = chaosWorker(runtime);
    const status = async (id: string) =>
      (await runtime.db.selectFrom('payments').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;

    const [a, b, c] = payoutAddresses(3);
    const [settledOnOld] = await createPaidPayments(runtime, merchant.accountId, [
      { amount: 1500, currency: 'NGN', payoutAddress: a! },
    ]);
    await waitFor(
      'the first payment settled on the old chain',
      async () => (await status(settledOnOld!.id)) === 'settled',
    );
    const oldChain = await identifyChain(chain);

    // A batch in flight on the old chain when it goes away.
    await first.setAutomine(false);
    const [inFlight] = await createPaidPayments(runtime, merchant.accountId, [
      { amount: 2500, currency: 'NGN', payoutAddress: b! },
    ]);
    await waitFor('a transaction broadcast on the old chain', async () => {
      const row = await runtime.db
        .selectFrom('chain_transactions')
        .select('status')
        .where('chain_key', '=', oldChain.key)
        .where('status', '=', 'broadcast')
        .executeTakeFirst();
      return row !== undefined;
    });
    const oldNonces = await runtime.db.selectFrom('relayer_nonces').select('nonce').execute();
    expect(oldNonces.length).toBeGreaterThan(1);

    // Same URL, another genesis.
    const second = await devnetNode({ initialDate: new Date('2025-06-01T00:00:00Z') });
    endpoint.retarget(second.url);
    // Waited for, not read once: viem shares one in-flight request among identical calls, so a
    // read that joins the worker's own, sent to the old node just before the switch, still sees it.
    let newChain = oldChain;
    await waitFor('the URL serves the new chain', async () => {
      newChain = await identifyChain(chain);
      return newChain.key !== oldChain.key;
    });
    const [afterRestart] = await createPaidPayments(runtime, merchant.accountId, [
      { amount: 3500, currency: 'NGN', payoutAddress: c! },
    ]);

    await waitFor('readiness says not ready', async () => !(await chainReadiness(runtime)).ready);
    expect((await chainReadiness(runtime)).reason).toContain(newChain.key);
    // What a load balancer sees: every API instance answers /readyz with 503 and the reason.
    const api = await testApp(runtime);
    const notReady = await api.inject({ method: 'GET', url: '/readyz' });
    expect(notReady.statusCode).toBe(503);
    expect(notReady.json().error).toMatchObject({ type: 'api_error', code: 'unavailable' });
    expect(notReady.json().error.message).toContain(newChain.key);
    expect(await metricValue(runtime, 'plainpay_chain_identity_mismatch')).toBe(1);
    await waitFor('the refusal logged at error level', async () =>
      logs.some((l) => l.level >= 50 && l.msg.startsWith('chain identity') && l.observed === newChain.key),
    );
    // Refused: nothing signed for or sent to the new chain; the relayer's nonce there is untouched.
    const onNew = await runtime.db
      .selectFrom('chain_transactions')
      .select('hash')
      .where('chain_key', '=', newChain.key)
      .execute();
    expect(onNew).toEqual([]);
    expect(await chain.publicClient.getTransactionCount({ address: chain.relayer.address })).toBe(0);
    // Payments keep being taken in (no chain needed for that), and wait.
    await waitFor('the new payment taken in', async () => (await status(afterRestart!.id)) === 'settling');
    expect(await status(inFlight!.id)).toBe('settling');
    expect(
      await runtime.db.selectFrom('chain_transactions').select('hash').where('chain_key', '=', newChain.key).execute(),
    ).toEqual([]);

    // The operator: a wrong key is refused; the observed one, with the old (reset) chain declared gone.
    await expect(runCli(runtime, [oldChain.key])).rejects.toThrow(/observed chain is/);
    const shown = await runCli(runtime, []);
    expect(shown.stdout.join('\n')).toContain(`plainpay chain adopt ${newChain.key}`);
    const adopted = await runCli(runtime, [newChain.key, '--old-chain-gone', '--json']);
    expect(adopted.code).toBe(0);
    expect(JSON.parse(adopted.stdout[0]!)).toMatchObject({
      previous: oldChain.key,
      adopted: newChain.key,
      stranded_batches: 1,
      replanned_batches: 1,
    });

    await waitFor('both payments settled on the new chain', async () => {
      return (await status(inFlight!.id)) === 'settled' && (await status(afterRestart!.id)) === 'settled';
    });
    expect(await chainReadiness(runtime)).toEqual({ ready: true });
    expect((await api.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    expect(await metricValue(runtime, 'plainpay_chain_identity_mismatch')).toBe(0);
    const settled = await runtime.db
      .selectFrom('payments')
      .select(['id', 'settlement_minor', 'settlement_tx_hash'])
      .where('id', 'in', [inFlight!.id, afterRestart!.id])
      .execute();
    const byId = new Map(settled.map((p) => [p.id, p]));
    await expectPaidExactlyOnce(
      runtime,
      chain,
      new Map([
        [b!.toLowerCase(), byId.get(inFlight!.id)!.settlement_minor],
        [c!.toLowerCase(), byId.get(afterRestart!.id)!.settlement_minor],
        // Paid on the old chain, which is gone: nothing of it on the new one.
        [a!.toLowerCase(), 0n],
      ]),
    );
    await worker.stop();
  });
});
