// Runs before each test file of the projects whose worker runs many files one after another
// (vitest.config.ts: unit and integration, `isolate: false`). The worker keeps what Node loaded
// itself (node_modules, Hardhat's EDR, PGlite's wasm), which is most of a file's start-up cost, but
// every module of src/, tools/ and test/ is evaluated afresh for each file, as in a process of its
// own: the harness opens a new database and registers its clean-ups again, and no module-level
// state (a cache, a counter, a lost connection) carries from one file to the next. Another file's
// vi.mock never applies here either: vitest keeps mocks per test file.

import { vi } from 'vitest';

vi.resetModules();
