#!/usr/bin/env node
// Runs a TypeScript entry point without a build step: tsx registers its ESM loader,
// then the script is imported. Used by npm scripts (bench, evals, contracts:build).
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { register } from 'tsx/esm/api';

register();
const [script, ...rest] = process.argv.slice(2);
if (!script) {
  console.error('usage: run-ts.mjs <file.ts> [args...]');
  process.exit(2);
}
process.argv = [process.argv[0], resolve(script), ...rest];
await import(pathToFileURL(resolve(script)).href);
