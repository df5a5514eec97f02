import { isConnectionFailure } from './core/errors.ts';
import type { Logger } from './core/logger.ts';
import type { NotificationChannel } from './db/notifications.ts';
import type { Runtime } from './runtime.ts';

/**
 * A background job of the worker role (src/workers.ts lists them): `start(runtime) → stop()`.
 * Its own module, so that a job's file can use pollingJob without importing the list of jobs.
 */
export type WorkerJob = (runtime: Runtime) => () => Promise<void>;

/** The longest wait between failed passes (a job that polls less often waits its own interval). */
export const MAX_BACKOFF_MS = 10_000;

/**
 * How long an idle job that is woken by notifications waits before it looks for work anyway. A
 * notification is a hint and can be lost (a dropped LISTEN connection, a runtime without
 * notifications, a row written behind the service's back): this is the most that costs.
 */
export const SAFETY_POLL_MS = 10_000;

/**
 * A job's sleep between passes that a notification can cut short. A wake that comes while no one
 * sleeps (the job is in a pass, which may have read the database before the change) is kept: the
 * next sleep returns at once, so a change is never left waiting for the safety poll.
 */
export interface Wakeup {
  sleep(ms: number): Promise<void>;
  wake(): void;
}

export function wakeup(): Wakeup {
  let pending = false;
  let cut: (() => void) | undefined;
  return {
    wake() {
      pending = true;
      cut?.();
    },
    sleep(ms) {
      if (pending) {
        pending = false;
        return Promise.resolve();
      }
      return new Promise((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          cut = undefined;
          pending = false;
          resolve();
        };
        const timer = setTimeout(done, ms);
        cut = done;
      });
    },
  };
}

/** A notification that means a job may have work: a channel, and optionally which payloads count. */
export interface WakeSource {
  channel: NotificationChannel;
  /** Only payloads it accepts wake the job; '' (sent after a lost LISTEN connection came back) always does. */
  accepts?: (payload: string) => boolean;
}

/**
 * LISTENs on each source and calls wake on a matching notification; returns the unsubscribe. A
 * LISTEN that cannot be set up is logged and left to the job's safety poll.
 */
export function wakeOnNotifications(
  runtime: Pick<Runtime, 'notifications' | 'logger'>,
  name: string,
  sources: readonly WakeSource[],
  wake: () => void,
): () => Promise<void> {
  const subscriptions = sources.map(({ channel, accepts }) =>
    runtime.notifications
      .listen(channel, (payload) => {
        if (payload === '' || accepts === undefined || accepts(payload)) wake();
      })
      .catch((error: unknown) => {
        runtime.logger.warn({ err: error, channel }, `${name} job cannot listen for notifications; it polls instead`);
        return async () => {};
      }),
  );
  return async () => {
    await Promise.all(subscriptions.map(async (subscribed) => (await subscribed)()));
  };
}

/** How long a job waits before its next pass: until `dueAt` (read against `now`), at most `capMs`. */
export function untilDue(dueAt: Date | null | undefined, now: Date, capMs: number): number {
  if (!dueAt) return capMs;
  return Math.max(0, Math.min(capMs, dueAt.getTime() - now.getTime()));
}

/**
 * A job that runs `pass` one at a time: the next pass comes `pollMs` after one ends, or after the
 * wait the pass returns (in ms: until the next thing it knows is due). `pass` is told when the job
 * is stopping (to end a loop of full batches early). A failed pass is retried after a back-off that
 * doubles with each failure in a row (passFailures). Stopping waits for the pass under way.
 */
export function pollingJob(
  name: string,
  pollMs: number,
  /** Resolves to the wait before the next pass in ms; anything else (nothing) means pollMs. */
  pass: (runtime: Runtime, stopping: () => boolean) => Promise<unknown>,
): WorkerJob {
  return (runtime) => {
    let stopped = false;
    const sleeper = wakeup();
    const failures = passFailures(name, pollMs, runtime.logger);
    const running = (async () => {
      while (!stopped) {
        let delay = pollMs;
        try {
          const wait = await pass(runtime, () => stopped);
          delay = typeof wait === 'number' ? wait : pollMs;
          failures.succeeded();
        } catch (error) {
          delay = failures.failed(error);
        }
        if (!stopped) await sleeper.sleep(delay);
      }
    })();
    return async () => {
      stopped = true;
      sleeper.wake();
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
