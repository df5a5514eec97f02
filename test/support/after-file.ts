// Clean-ups that run once the test file is done, wherever they are registered. vitest 4 silently
// ignores an afterAll registered inside a hook or a test (a support function first called from a
// beforeAll or an `it`), so support code that opens something lazily registers its clean-up here:
// one afterAll, registered when the file's imports load this module, runs them all, newest first.

import { afterAll } from 'vitest';

const cleanups: Array<() => unknown> = [];

afterAll(async () => {
  const errors: unknown[] = [];
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      await cleanup();
    } catch (error) {
      errors.push(error);
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new AggregateError(errors, `${errors.length} clean-ups failed`);
});

/** Runs `cleanup` after the file's tests and its own afterAll hooks (later registrations first). */
export function afterFile(cleanup: () => unknown): void {
  cleanups.push(cleanup);
}
