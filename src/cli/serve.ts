import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { type CreatedAccount, createAccount } from '../accounts/create-account.ts';
import type { Config } from '../config/config.ts';
import { countAccounts } from '../db/repositories/accounts.ts';
import { gracefulStopOf } from '../http/graceful-stop.ts';
import { createRuntime, type Runtime } from '../runtime.ts';
import { refuseMerchantCollection } from '../payments/rails/collections.ts';
import { collectionsWithRefusedCallbacks } from '../payments/rails/mpesa.ts';
import { startWorkers } from '../workers.ts';
import { type AdminSocket, startAdminSocket } from './admin-socket.ts';
import { type CliOutput, type ForwardedCommands, parseStrict, type ServiceCommand } from './command.ts';
import { EXIT, UsageError } from './failures.ts';

const ROLES = ['all', 'api', 'checkout', 'worker'] as const;
type Role = (typeof ROLES)[number];

/**
 * `plainpay serve`: the API host, the checkout host and the workers in one process by default;
 * `--role` runs one of them so that N API instances and M workers can share one Postgres.
 */
export const serve: ServiceCommand = {
  kind: 'service',
  help: `Options:
  --role ROLE      all (default), api, checkout or worker: run one role, so that several API
                   instances and workers can share one Postgres (DATABASE_URL).

Migrations are applied at start. On the embedded database (no DATABASE_URL), the CLI's database
commands (migrate, accounts, keys, audit) run inside this process while it runs, through the
admin socket <PLAINPAY_DATA_DIR>/pgdata.sock. SIGINT or SIGTERM stops it gracefully, within
SHUTDOWN_TIMEOUT_MS (docs/operations.md, "Rolling deploys / shutdown").`,
  parse(args) {
    const { values } = parseStrict(() => parseArgs({ args, options: { role: { type: 'string', default: 'all' } } }));
    if (!(ROLES as readonly string[]).includes(values.role)) {
      throw new UsageError(`--role must be one of ${ROLES.join(', ')}.`, { param: 'role' });
    }
    return (config, out, forwarded) => serveRole(config, values.role as Role, out, forwarded);
  },
};

async function serveRole(config: Config, role: Role, out: CliOutput, forwarded: ForwardedCommands): Promise<number> {
  const stopRequested = stopSignal(out);
  let runtime: Runtime;
  try {
    runtime = await createRuntime(config, { progress: (line) => out.stdout(line) });
  } catch (error) {
    stopRequested.dispose();
    throw error;
  }
  const servers: FastifyInstance[] = [];
  let adminSocket: AdminSocket | undefined;
  let stopWorkers: (() => Promise<void>) | undefined;
  try {
    await refuseMerchantCollection(runtime.db, (message) => runtime.logger.warn(message));
    for (const problem of await collectionsWithRefusedCallbacks(runtime.db, config.publicBaseUrl)) {
      runtime.logger.error(problem);
    }
    const demo = role === 'all' || role === 'api' ? await ensureDemoAccount(runtime) : undefined;
    // Only the embedded database needs it: on Postgres (runtime.dbKind) the CLI connects itself.
    if (config.database.kind === 'pglite') {
      adminSocket = await startAdminSocket(
        config.database.dataDir,
        (argv, forwardedOut) =>
          forwarded(
            argv,
            {
              db: runtime.db,
              secretBox: runtime.secretBox,
              clock: runtime.clock,
              config: runtime.config,
              runtime: async () => runtime,
            },
            forwardedOut,
          ),
        runtime.logger,
      );
    }
    if (role === 'all' || role === 'api') {
      // Imported per role: a worker process never loads the HTTP hosts (faster restarts).
      const { buildApp } = await import('../http/app.ts');
      const api = await buildApp(runtime);
      await api.listen({ port: config.port, host: config.host });
      listening(runtime, 'api', api);
      servers.push(api);
    }
    if (role === 'all' || role === 'checkout') {
      const { buildCheckoutApp } = await import('../checkout/app.ts');
      const checkout = await buildCheckoutApp(runtime);
      await checkout.listen({ port: config.checkoutPort, host: config.host });
      listening(runtime, 'checkout', checkout);
      servers.push(checkout);
    }
    if (role === 'worker' && config.metricsToken !== undefined) {
      const { buildWorkerMetricsApp } = await import('../metrics/worker-app.ts');
      const metrics = await buildWorkerMetricsApp(runtime);
      await metrics.listen({ port: config.port, host: config.host });
      listening(runtime, 'metrics', metrics);
      servers.push(metrics);
    }
    // Last: a failure above must not leave workers running that nothing stops.
    if (role === 'all' || role === 'worker') stopWorkers = startWorkers(runtime);

    out.stdout(`plainpay is running (role: ${role}, database: ${runtime.dbKind})`);
    if (role === 'all' || role === 'api') out.stdout(`  API:      ${config.publicBaseUrl}`);
    if (role === 'all' || role === 'checkout') out.stdout(`  Checkout: ${config.checkoutBaseUrl}`);
    if (role === 'worker' && config.metricsToken !== undefined)
      out.stdout(`  Metrics:  http://${config.host}:${config.port}/metrics (METRICS_TOKEN)`);
    if (adminSocket) out.stdout(`  CLI:      ${adminSocket.path} (plainpay commands run here while this runs)`);
    if (demo) {
      out.stdout(`  Demo account: ${demo.account} (test mode)`);
      out.stdout(`  Demo key:     ${demo.api_key}`);
      out.stdout(`  Try: curl -H "Authorization: Bearer ${demo.api_key}" ${config.publicBaseUrl}/v1/ping`);
    }
  } catch (error) {
    await Promise.allSettled([...servers.map((s) => s.close()), adminSocket?.close()]);
    await runtime.close();
    stopRequested.dispose();
    throw error;
  }

  await stopRequested.promise;
  const { shutdownTimeoutMs } = config;
  runtime.logger.info({ role, shutdownTimeoutMs }, 'stopping');
  // Bounded: a hung request, job or database must not keep a deploy waiting past the orchestrator's
  // grace period. Exiting here is as safe as a crash (kill -9 at any point loses nothing): the
  // leases this process holds lapse and another worker takes them up.
  const deadline = setTimeout(() => {
    runtime.logger.error(
      { shutdownTimeoutMs },
      'graceful stop did not finish within SHUTDOWN_TIMEOUT_MS; exiting without it (leases held by this process lapse on their own)',
    );
    process.exit(EXIT.failure);
  }, shutdownTimeoutMs);
  // Graceful: stop taking connections and CLI commands; requests already received get most of
  // the time (then 503), the workers end their pass or give their leases up; then the database closes.
  const drainMs = Math.round(shutdownTimeoutMs * 0.8);
  const forceMs = Math.round(shutdownTimeoutMs * 0.1);
  await Promise.allSettled([
    ...servers.map((server) => stopServer(server, drainMs, forceMs)),
    adminSocket?.close(),
    stopWorkers?.(),
  ]);
  await runtime.close();
  clearTimeout(deadline);
  stopRequested.dispose();
  runtime.logger.info({ role }, 'stopped');
  // A request answered 503 at the drain deadline may still be waiting on something that hangs (a
  // provider, a model): its answer is sent, so nothing is left to wait for.
  setTimeout(() => process.exit(EXIT.ok), 1000).unref();
  return EXIT.ok;
}

/** The host's graceful stop (http/graceful-stop.ts), or fastify's close for a host without one. */
async function stopServer(server: FastifyInstance, drainMs: number, forceMs: number): Promise<void> {
  const graceful = gracefulStopOf(server);
  await (graceful ? graceful.stop({ drainMs, forceMs }) : server.close());
}

/**
 * SIGINT/SIGTERM ask for a graceful stop, from the very start (a signal during startup stops the
 * process once it is up, instead of killing it mid-migration). The handlers stay installed until
 * the stop is done: a second signal (Ctrl-C reaches node both from the terminal and through npm)
 * must not fall back to the default action and cut in-flight work, leaving PGlite unclosed.
 */
function stopSignal(out: CliOutput): { promise: Promise<void>; dispose(): void } {
  let requested = false;
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  const onSignal = (signal: NodeJS.Signals): void => {
    if (requested) {
      out.stderr(`${signal}: already stopping, letting in-flight work finish.`);
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

/**
 * The lines fastify wrote at each listen (an address each) when it had a logger (the hosts give it
 * none: request-log.ts), for whoever reads the structured logs rather than the banner.
 */
function listening(runtime: Runtime, server: string, app: FastifyInstance): void {
  for (const bound of app.addresses()) {
    const url =
      typeof bound === 'string'
        ? bound
        : `http://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`;
    runtime.logger.info({ server, address: url }, `Server listening at ${url}`);
  }
}
