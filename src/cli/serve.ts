import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { type CreatedAccount, createAccount } from '../accounts/create-account.ts';
import type { Config } from '../config/config.ts';
import { countAccounts } from '../db/repositories/accounts.ts';
import { createRuntime, type Runtime } from '../runtime.ts';
import { startWorkers } from '../workers.ts';

const ROLES = ['all', 'api', 'checkout', 'worker'] as const;
type Role = (typeof ROLES)[number];

/**
 * `plainpay serve`: the API host, the checkout host and the workers in one process by default;
 * `--role` runs one of them so that N API instances and M workers can share one Postgres.
 */
export async function serveCommand(config: Config, options: { role?: string }): Promise<number> {
  const role = (options.role ?? 'all') as Role;
  if (!ROLES.includes(role)) {
    console.error(`--role must be one of ${ROLES.join(', ')}`);
    return 2;
  }
  const stopRequested = stopSignal();
  let runtime: Runtime;
  try {
    runtime = await createRuntime(config);
  } catch (error) {
    stopRequested.dispose();
    throw error;
  }
  const servers: FastifyInstance[] = [];
  let stopWorkers: (() => Promise<void>) | undefined;
  try {
    const demo = role === 'all' || role === 'api' ? await ensureDemoAccount(runtime) : undefined;
    if (role === 'all' || role === 'api') {
      // Imported per role: a worker process never loads the HTTP hosts (faster restarts).
      const { buildApp } = await import('../http/app.ts');
      const api = await buildApp(runtime);
      await api.listen({ port: config.port, host: config.host });
      servers.push(api);
    }
    if (role === 'all' || role === 'checkout') {
      const { buildCheckoutApp } = await import('../http/checkout-app.ts');
      const checkout = await buildCheckoutApp(runtime);
      await checkout.listen({ port: config.checkoutPort, host: config.host });
      servers.push(checkout);
    }
    if (role === 'all' || role === 'worker') stopWorkers = startWorkers(runtime);

    console.log(`plainpay is running (role: ${role}, database: ${runtime.dbKind})`);
    if (role === 'all' || role === 'api') console.log(`  API:      ${config.publicBaseUrl}`);
    if (role === 'all' || role === 'checkout') console.log(`  Checkout: ${config.checkoutBaseUrl}`);
    if (demo) {
      console.log(`  Demo account: ${demo.account} (test mode)`);
      console.log(`  Demo key:     ${demo.api_key}`);
      console.log(`  Try: curl -H "Authorization: Bearer ${demo.api_key}" ${config.publicBaseUrl}/v1/ping`);
    }
  } catch (error) {
    await Promise.allSettled(servers.map((s) => s.close()));
    await runtime.close();
    stopRequested.dispose();
    throw error;
  }

  await stopRequested.promise;
  // Graceful: stop taking requests, let in-flight work finish, then close the database.
  await Promise.allSettled(servers.map((s) => s.close()));
  await stopWorkers?.();
  await runtime.close();
  stopRequested.dispose();
  return 0;
}

/**
 * SIGINT/SIGTERM ask for a graceful stop, from the very start (a signal during startup stops the
 * process once it is up, instead of killing it mid-migration). The handlers stay installed until
 * the stop is done: a second signal (Ctrl-C reaches node both from the terminal and through npm)
 * must not fall back to the default action and cut in-flight work, leaving PGlite unclosed.
 */
function stopSignal(): { promise: Promise<void>; dispose(): void } {
  let requested = false;
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  const onSignal = (signal: NodeJS.Signals): void => {
    if (requested) {
      console.error(`${signal}: already stopping, letting in-flight work finish.`);
      return;
    }
    requested = true;
    resolve();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    promise,
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/**
 * On the first start of an empty database, create a test-mode demo account so a newcomer can
 * curl at once. Its key is kept in the data directory (test mode only) and printed at each start.
 */
async function ensureDemoAccount(runtime: Runtime): Promise<CreatedAccount | undefined> {
  const file = join(runtime.config.dataDir, 'demo-account.json');
  if (!runtime.config.demoAccount) return undefined;
  if ((await countAccounts(runtime.db)) === 0) {
    const demo = await createAccount(runtime.db, runtime.secretBox, { name: 'Demo merchant', livemode: false });
    writeFileSync(file, `${JSON.stringify(demo, null, 2)}\n`, { mode: 0o600 });
    return demo;
  }
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as CreatedAccount;
  } catch {
    return undefined;
  }
}
