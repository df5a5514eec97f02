#!/usr/bin/env node
// The `plainpay` CLI. It runs the compiled JavaScript in dist/ (made by `npm install`, through the
// `prepare` script, or `npm run build`) when that build is complete and no source changed since;
// otherwise it runs the TypeScript sources through tsx's loader, so a fresh checkout without a
// build still works and an edit under src/ is what runs, never a stale dist/ (scripts/dist-freshness.mjs).

import { distIsFresh } from '../scripts/dist-freshness.mjs';

const argv = process.argv.slice(2);
let main;
if (distIsFresh()) {
  main = new URL('../dist/bundle/main.js', import.meta.url);
} else {
  // Said only where someone waits for a start: other commands' output is read by scripts. On
  // stderr: serve's stdout may be JSON log lines only (LOG_FORMAT, docs/configuration.md).
  if (argv[0] === 'serve') {
    process.stderr.write(
      'Running from the TypeScript sources (dist/ is missing or older than them; `npm run build`)…\n',
    );
  }
  const { register } = await import('tsx/esm/api');
  register();
  main = new URL('../src/cli/main.ts', import.meta.url);
}
const { runCli } = await import(main.href);
const code = await runCli(argv);
if (typeof code === 'number') process.exitCode = code;
