import { isConnectionFailure } from './core/errors.ts';
import type { Logger } from './core/logger.ts';
import type { Runtime } from './runtime.ts';

/**
 * A background job of the worker role (src/workers.ts lists them): `start(runtime) → stop()`.
 * Its own module, so that a job's file can use pollingJob without importing the list of jobs.
 */
export type WorkerJob = (runtime: Runtime) => () => Promise<void>;

/** The longest wait between failed passes (a job that polls less often waits its own interval). */
export const MAX_BACKOFF_MS = 10_000;

/**
 * A job that runs `pass` every `pollMs`, one pass at a time; `pass` is told when the job is
 * stopping (to end a loop of full batches early). A failed pass is retried after a back-off that
 * doubles with each failure in a row (passFailures). Stopping waits for the pass under way.
 */
export function pollingJob(
  name: string,
  pollMs: number,
  pass: (runtime: Runtime, stopping: () => boolean) => Promise<void>,
): WorkerJob {
  return (runtime) => {
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    let running: Promise<void> = Promise.resolve();
    const failures = passFailures(name, pollMs, runtime.logger);
    const tick = async (): Promise<void> => {
      let delay = pollMs;
      try {
        await pass(runtime, () => stopped);
        failures.succeeded();
      } catch (error) {
        delay = failures.failed(error);
      }
      if (!stopped) timer = setTimeout(() => (running = tick()), delay);
    };
    running = tick();
    return async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    };
  };
}

export interface PassFailures {
  /** Records a failed pass; returns how long to wait before the next one. */
  failed(error: unknown): number;
  /** Records a pass that succeeded: the back-off resets, and an outage is reported over. */
  succeeded(): void;
}

/**
 * Failures of a job's passes in a row. Each one doubles the wait before the next pass, from
 * 2 × pollMs up to MAX_BACKOFF_MS (or pollMs, if longer), so a database or other dependency that is
 * down is not hammered by every worker, and the job resumes within one capped wait of its return.
 * When the database cannot be reached (isConnectionFailure), that is said once per outage, at
 * warn, and once more when a pass succeeds again; other failures are bugs or data faults and each
 * is logged at error.
 */
export function passFailures(
  name: string,
  pollMs: number,
  logger: Pick<Logger, 'warn' | 'error' | 'info'>,
): PassFailures {
  let inRow = 0;
  let unreachableSince: number | undefined;
  return {
    failed(error) {
      inRow += 1;
      const delay = Math.min(Math.max(MAX_BACKOFF_MS, pollMs), pollMs * 2 ** Math.min(inRow, 20));
      if (!isConnectionFailure(error)) {
        logger.error({ err: error, failures: inRow, retryInMs: delay }, `${name} job failed; retrying`);
      } else if (unreachableSince === undefined) {
        unreachableSince = Date.now();
        logger.warn(
          { err: error, retryInMs: delay },
          `${name} job paused: the database (or another dependency) cannot be reached; retrying with back-off`,
        );
      }
      return delay;
    },
    succeeded() {
      if (unreachableSince !== undefined) {
        logger.info({ downMs: Date.now() - unreachableSince, failures: inRow }, `${name} job resumed`);
      }
      inRow = 0;
      unreachableSince = undefined;
    },
  };
}
