import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [
      'src/**/*.test.ts',
      'tools/**/*.test.ts',
      'test/**/*.test.ts',
      'evals/**/*.test.ts',
      'prompts/**/*.test.ts',
    ],
    // The chaos suite starts and stops servers of its own: `npm run chaos` (vitest.chaos.config.ts).
    exclude: [...configDefaults.exclude, 'test/chaos/**'],
    // The machine has 2 cores (STACK.md): more workers only add PGlite start-up cost.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    globalSetup: ['test/global-setup.ts'],
  },
});
