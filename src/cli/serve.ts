import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { type CreatedAccount, createAccount } from '../accounts/create-account.ts';
import type { Config } from '../config/config.ts';
import { chooseLogFormat, type LogFormat } from '../core/log-format.ts';
import { createLogger, type Logger } from '../core/logger.ts';
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
  const terminal = serveTerminal(config, out);
  const stopRequested = stopSignal(out);
  let runtime: Runtime;
  try {
    runtime = await createRuntime(config, { logger: terminal.logger, progress: terminal.say });
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
      terminal.listening('api', api);
      servers.push(api);
    }
    if (role === 'all' || role === 'checkout') {
      const { buildCheckoutApp } = await import('../checkout/app.ts');
      const checkout = await buildCheckoutApp(runtime);
      await checkout.listen({ port: config.checkoutPort, host: config.host });
      terminal.listening('checkout', checkout);
      servers.push(checkout);
    }
    if (role === 'worker' && config.metricsToken !== undefined) {
      const { buildWorkerMetricsApp } = await import('../metrics/worker-app.ts');
      const metrics = await buildWorkerMetricsApp(runtime);
      await metrics.listen({ port: config.port, host: config.host });
      terminal.listening('metrics', metrics);
      servers.push(metrics);
    }
    // Last: a failure above must not leave workers running that nothing stops.
    if (role === 'all' || role === 'worker') stopWorkers = startWorkers(runtime);

    await terminal.running(runtime, { role, adminSocket: adminSocket?.path, demo });
  } catch (error) {
    await Promise.allSettled([...servers.map((s) => s.close()), adminSocket?.close()]);
    await runtime.close();
    stopRequested.dispose();
    throw error;
  }

  await stopRequested.promise;
  const { shutdownTimeoutMs } = config;
  terminal.stopping(role, shutdownTimeoutMs);
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
  await terminal.stopped(role);
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

/** Two signals closer than this are one keypress seen twice. */
const SAME_SIGNAL_MS = 50;

/**
 * SIGINT/SIGTERM ask for a graceful stop, from the very start (a signal during startup stops the
 * process once it is up, instead of killing it mid-migration). The handlers stay installed until
 * the stop is done: a second signal (Ctrl-C reaches node both from the terminal and through npm)
 * must not fall back to the default action and cut in-flight work, leaving PGlite unclosed.
 */
function stopSignal(out: CliOutput): { promise: Promise<void>; dispose(): void } {
  let requestedAt: number | undefined;
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  const onSignal = (signal: NodeJS.Signals): void => {
    if (requestedAt !== undefined) {
      // One Ctrl-C under `npm start` arrives twice at once (from the terminal and from npm): said
      // only for a second signal someone sent.
      if (performance.now() - requestedAt > SAME_SIGNAL_MS) {
        out.stderr(`${signal}: already stopping, letting in-flight work finish.`);
      }
      return;
    }
    requestedAt = performance.now();
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
 * curl at once. Its key is kept in the data directory (test mode only) and printed at each start
 * on a terminal (serveTerminal).
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

interface ServeTerminal {
  logger: Logger;
  /** A line for the person who started serve: stdout on a terminal, stderr beside JSON logs. */
  say(line: string): void;
  /** A host is listening. */
  listening(server: string, app: FastifyInstance): void;
  /** The banner, once every role is up. */
  running(runtime: Runtime, details: BannerDetails): Promise<void>;
  stopping(role: Role, shutdownTimeoutMs: number): void;
  stopped(role: Role): Promise<void>;
}

interface BannerDetails {
  role: Role;
  adminSocket: string | undefined;
  demo: CreatedAccount | undefined;
}

/**
 * What serve shows, by log format (core/log-format.ts). Pretty (a terminal): pino-pretty lines
 * and, on stdout, a plain banner and plain "stopping…"/"stopped" lines. JSON (a pipe, a file):
 * stdout carries pino's JSON lines only, each step a log line; the banner goes to stderr, so a
 * pipe into jq reads JSON only. stderr is not private: container and systemd log drivers keep and
 * ship it like stdout. So the demo key (a working API key) is printed only when the banner's
 * stream is a terminal, a person's screen; otherwise the banner names the file that holds it.
 */
function serveTerminal(config: Config, out: CliOutput): ServeTerminal {
  const onTerminal = process.stdout.isTTY === true;
  const format: LogFormat = chooseLogFormat(config.logFormat, onTerminal);
  const logger = createLogger(config.logLevel, undefined, { format, colorize: onTerminal });
  const pretty = format === 'pretty';
  const say = pretty ? out.stdout : out.stderr;
  const sayingToTerminal = (pretty ? process.stdout : process.stderr).isTTY === true;
  return {
    logger,
    say,
    listening(server, app) {
      // The banner says it to a person; the structured line is for whoever reads the logs.
      if (pretty) return;
      for (const address of addressesOf(app)) logger.info({ server, address }, `Server listening at ${address}`);
    },
    async running(runtime, details) {
      // The transport writes from a worker thread: lines logged during the start come before the banner.
      if (pretty) await flushed(logger);
      else {
        logger.info(
          {
            role: details.role,
            database: runtime.dbKind,
            ...(hasApi(details.role) ? { api: config.publicBaseUrl } : {}),
            ...(hasCheckout(details.role) ? { checkout: config.checkoutBaseUrl } : {}),
            ...(details.demo ? { demo_account: details.demo.account } : {}),
          },
          'plainpay is running',
        );
      }
      for (const line of bannerLines(config, runtime, details, sayingToTerminal)) say(line);
      if (pretty) say('Press Ctrl-C to stop.');
    },
    stopping(role, shutdownTimeoutMs) {
      if (pretty) say(`stopping (in-flight work gets up to ${Math.round(shutdownTimeoutMs / 1000)} s)…`);
      else logger.info({ role, shutdownTimeoutMs }, 'stopping');
    },
    async stopped(role) {
      if (!pretty) return logger.info({ role }, 'stopped');
      // Last: after every line the stop logged.
      await flushed(logger);
      say('stopped');
    },
  };
}

function flushed(logger: Logger): Promise<void> {
  return new Promise<void>((resolve) => logger.flush(() => resolve()));
}

const hasApi = (role: Role): boolean => role === 'all' || role === 'api';
const hasCheckout = (role: Role): boolean => role === 'all' || role === 'checkout';

/**
 * The banner README.md shows: where each host answers, the admin socket, the demo key (only on a
 * terminal: elsewhere the lines are kept by whatever collects them, so the key file is named).
 */
function bannerLines(
  config: Config,
  runtime: Runtime,
  { role, adminSocket, demo }: BannerDetails,
  onTerminal: boolean,
): string[] {
  const lines = [`plainpay is running (role: ${role}, database: ${runtime.dbKind})`];
  if (hasApi(role)) lines.push(`  API:      ${config.publicBaseUrl}`);
  if (hasCheckout(role)) lines.push(`  Checkout: ${config.checkoutBaseUrl}`);
  if (role === 'worker' && config.metricsToken !== undefined)
    lines.push(`  Metrics:  http://${config.host}:${config.port}/metrics (METRICS_TOKEN)`);
  if (adminSocket) lines.push(`  CLI:      ${adminSocket} (plainpay commands run here while this runs)`);
  if (demo) {
    lines.push(`  Demo account: ${demo.account} (test mode)`);
    if (onTerminal) {
      lines.push(`  Demo key:     ${demo.api_key}`);
      lines.push(`  Try: curl -H "Authorization: Bearer ${demo.api_key}" ${config.publicBaseUrl}/v1/ping`);
    } else {
      const file = join(config.dataDir, 'demo-account.json');
      lines.push(`  Demo key:     not printed (output is not a terminal): it is in ${file}`);
    }
  }
  return lines;
}

/** The addresses a host is bound to, as URLs. */
function addressesOf(app: FastifyInstance): string[] {
  return app
    .addresses()
    .map((bound) =>
      typeof bound === 'string'
        ? bound
        : `http://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`,
    );
}
