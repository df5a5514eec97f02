import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * `npm test` runs four projects; each also runs alone (`npm run test:unit`, `test:integration`,
 * `test:processes`, `test:browser`, or `npx vitest run --project <name>`):
 *
 * - unit: pure functions, listed by name below. No database, no network, no child process, no
 *   chain; they may read committed files.
 * - integration: every other test file, so a new one lands here unless it is added to a list:
 *   a database copied from the run's migrated template (test/support/harness.ts), the app
 *   through inject, fake servers on loopback, the in-process chain.
 * - processes: files that start the CLI, `plainpay serve`, workers or other programs as child
 *   processes, listed by name below.
 * - browser: test/browser/, which drive chromium.
 *
 * unit and integration files run one after another in a worker that stays up (isolate: false),
 * each with its own module instances (test/file-setup.ts) and, in integration, its own database.
 * A process per file spent ~1.3 s of each integration file re-loading node_modules (fastify, viem,
 * Hardhat, PGlite): about half of the suite's time on two cores. What a shared worker does not
 * undo is the process's own state: a file must not change process.env or globals, install fake
 * timers, or leave a server, timer or child running after its clean-ups (test/support/after-file.ts).
 * processes and browser keep a process per file: they handle signals and drive other programs.
 *
 * The chaos suite starts and stops servers of its own: `npm run chaos` (vitest.chaos.config.ts).
 */

const UNIT = [
  'evals/planner.test.ts',
  'src/agent/grounding.test.ts',
  'src/agent/numbers.test.ts',
  'src/agent/planner/planner.test.ts',
  'src/chain/contracts/build.test.ts',
  'src/checkout/html.test.ts',
  'src/checkout/return-url.test.ts',
  'src/config/config.test.ts',
  'src/config/configuration-docs.test.ts',
  'src/core/clock.test.ts',
  'src/core/json-text.test.ts',
  'src/core/log-format.test.ts',
  'src/domain/**/*.test.ts',
  'src/http/running-requests.test.ts',
  'src/http/schema-compilers.test.ts',
  'src/mcp/sessions.test.ts',
  'src/pipeline/stored-result.test.ts',
  'src/metrics/metrics.test.ts',
  'src/payments/rails/mpesa.test.ts',
  'src/payments/rails/paystack.test.ts',
  'src/policy/**/*.test.ts',
  'src/webhooks/delivery-worker.test.ts',
  'src/webhooks/event-feed.test.ts',
  'src/webhooks/signer.test.ts',
  'src/webhooks/webhook-url.test.ts',
  'src/worker-job.test.ts',
  'test/fuzz.generators.test.ts',
  'test/start-imports.test.ts',
];

const PROCESSES = [
  'test/audit.finance.test.ts',
  'test/audit.test.ts',
  'test/cli.conventions.test.ts',
  'test/cli.listen.test.ts',
  'test/cli.test.ts',
  'test/database.test.ts',
  'test/docs-examples.test.ts',
  'test/mcp.inspector.test.ts',
  'test/mcp.stdio.test.ts',
  'test/metrics.worker.test.ts',
  'test/multi-instance.test.ts',
  'test/openapi.client.test.ts',
  'test/reconciliation.cli.test.ts',
  'test/serve.terminal.test.ts',
  'test/settlement.processes.test.ts',
  'test/settlement.schedules.processes.test.ts',
  'test/webhooks.crash.test.ts',
  'test/webhooks.flow.test.ts',
];

const BROWSER = ['test/browser/**/*.test.ts'];

const ALL = [
  'src/**/*.test.ts',
  'tools/**/*.test.ts',
  'test/**/*.test.ts',
  'evals/**/*.test.ts',
  'prompts/**/*.test.ts',
];

/**
 * vitest 4 applies `--exclude` from the command line to the root config only, not to the projects
 * (vitest-dev/vitest#7368), so `vitest run --exclude <glob>` would run every file it names. .ci/run
 * excludes that way (the browser and multi-instance files from its Postgres step): the projects
 * take the command line's excludes here.
 */
function excludesFromCommandLine(argv: readonly string[] = process.argv): string[] {
  return argv.flatMap((arg, i) => {
    if (arg === '--exclude') return argv[i + 1] === undefined ? [] : [argv[i + 1] as string];
    return arg.startsWith('--exclude=') ? [arg.slice('--exclude='.length)] : [];
  });
}

const NOT_IN_NPM_TEST = [...configDefaults.exclude, 'test/chaos/**', ...excludesFromCommandLine()];

/**
 * What the projects that touch a database share: the global setup migrates one template per run
 * (test/global-setup.ts, shared by these projects) and each file copies it.
 */
const withDatabase = {
  testTimeout: 30_000,
  hookTimeout: 60_000,
  globalSetup: ['test/global-setup.ts'],
};

/** Files run one after another in a worker that stays up, with fresh modules each (see above). */
const sharedWorker = {
  isolate: false,
  setupFiles: ['test/file-setup.ts'],
};

/**
 * vitest queues projects by name and, within one, the slowest files first. Named order would put
 * processes, which hold some of the longest files (cli.conventions, audit.finance), after every
 * integration file, where they would run on alone at the end. Long, process-per-file projects go
 * first instead, and the short unit files fill the gaps at the end.
 */
const PROJECT_ORDER = ['browser', 'processes', 'integration', 'unit'];

/**
 * The files that take longest (seconds with four workers on a quiet 2-core machine, from
 * `npx vitest run --reporter=json`), queued first within their project. vitest orders by the
 * durations it cached from the last run, and a clean clone (CI) has none: it then keeps glob order,
 * which started the REST fuzz, the longest file by far, half way through the integration files and
 * the settlement fault run at the very end, where each ran on alone. Queued first across projects
 * instead, the REST fuzz ran beside chromium and the child processes and took longer still
 * (120 s against 97 s; 239 s for the whole run against 215 s).
 */
const LONGEST_FIRST = [
  'test/browser/checkout-outcomes.test.ts', // 21
  'test/browser/checkout-rails.test.ts', // 16
  'test/browser/dashboard.test.ts', // 13
  'test/cli.conventions.test.ts', // 28
  'test/cli.test.ts', // 16
  'test/audit.finance.test.ts', // 11
  'test/audit.test.ts', // 11
  'test/mcp.inspector.test.ts', // 9
  'test/fuzz.api.test.ts', // 97
  'test/settlement.faults.test.ts', // 42, mostly waiting on blocks and the fault proxy's delays
  'test/fuzz.hosts.test.ts', // 17
  'src/db/database-image.test.ts', // 16
  'test/money.property.test.ts', // 9
  'test/agent.conversation.test.ts', // 8
  'evals/planner.test.ts', // 5, the longest unit file
];

class ProjectsInOrder extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification): number => PROJECT_ORDER.indexOf(spec.project.name);
    const long = (spec: TestSpecification): number => {
      const at = LONGEST_FIRST.findIndex((path) => spec.moduleId.endsWith(`/${path}`));
      return at === -1 ? LONGEST_FIRST.length : at;
    };
    // Array.prototype.sort is stable: within a project, after the known long files, the base order
    // (slowest first by the cache, when there is one) stays.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b) || long(a) - long(b));
  }
}

export default defineConfig({
  test: {
    // Four, on a 2-core machine (STACK.md): much of a test file's time is waiting (on a child
    // process, chromium, a block, a fault proxy's delay), and two workers left a quarter of the
    // cores idle. Measured on a quiet machine, `npm test` from a clean clone: 280 s with two
    // workers, 243 s with three, 215 s with four. All four projects share these workers.
    maxWorkers: 4,
    sequence: { sequencer: ProjectsInOrder },
    projects: [
      {
        test: {
          name: 'unit',
          include: UNIT,
          exclude: NOT_IN_NPM_TEST,
          // A thread, not a process: nothing here loads Hardhat's EDR, which allows one per process.
          pool: 'threads',
          ...sharedWorker,
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ALL,
          exclude: [...NOT_IN_NPM_TEST, ...UNIT, ...PROCESSES, ...BROWSER],
          ...sharedWorker,
          ...withDatabase,
        },
      },
      {
        test: {
          name: 'processes',
          include: PROCESSES,
          exclude: NOT_IN_NPM_TEST,
          ...withDatabase,
        },
      },
      {
        test: {
          name: 'browser',
          include: BROWSER,
          exclude: NOT_IN_NPM_TEST,
          ...withDatabase,
        },
      },
    ],
  },
});
