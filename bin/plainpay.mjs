#!/usr/bin/env node
// The `plainpay` CLI. It runs the TypeScript sources through tsx's loader so that
// `npm install && npm start` works on a fresh machine with no build step.

import { register } from 'tsx/esm/api';

register();
const main = new URL('../src/cli/main.ts', import.meta.url);
const { runCli } = await import(main.href);
const code = await runCli(process.argv.slice(2));
if (typeof code === 'number') process.exitCode = code;
