import type { Runtime } from './runtime.ts';

/**
 * A background job of the worker role (src/workers.ts lists them): `start(runtime) → stop()`.
 * Its own module, so that a job's file can use pollingJob without importing the list of jobs.
 */
export type WorkerJob = (runtime: Runtime) => () => Promise<void>;

/**
 * A job that runs `pass` every `pollMs`, one pass at a time; `pass` is told when the job is
 * stopping (to end a loop of full batches early). A failed pass is logged and retried at the next
 * tick. Stopping waits for the pass under way.
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
    const tick = async (): Promise<void> => {
      try {
        await pass(runtime, () => stopped);
      } catch (error) {
        runtime.logger.error({ err: error }, `${name} job failed; retrying`);
      }
      if (!stopped) timer = setTimeout(() => (running = tick()), pollMs);
    };
    running = tick();
    return async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    };
  };
}
