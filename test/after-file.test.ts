// vitest 4 silently drops an afterAll registered inside a hook or a test, so support code that opened
// a database (or a runtime, an app, a receiver) from a beforeAll never closed it: PGlite copies piled
// up in the temp dir and Postgres scratch databases were never dropped. afterFile runs such clean-ups
// at the end of the file wherever they were registered.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ran: string[] = [];

// Registered before the helper's own afterAll (the import below registers it), so it runs after it:
// after hooks unwind as a stack.
afterAll(() => {
  expect(ran).toEqual(['registered in a test', 'registered in beforeAll', 'registered at collection']);
});

const { afterFile } = await import('./support/after-file.ts');
afterFile(() => {
  ran.push('registered at collection');
});

describe('afterFile', () => {
  beforeAll(() => {
    afterFile(() => {
      ran.push('registered in beforeAll');
    });
  });

  it('runs clean-ups registered in a hook or a test at the end of the file, newest first', () => {
    afterFile(() => {
      ran.push('registered in a test');
    });
    expect(ran).toEqual([]);
  });
});
