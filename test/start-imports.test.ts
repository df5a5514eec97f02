import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// What `plainpay serve` loads before it answers is what its start costs (docs/performance.md, "What
// a start reads"). These packages are imported by the code that uses them, when it first runs; a
// static import on the way from the CLI to a listening server would load them at every start again.
const ROOT = resolve(import.meta.dirname, '..');

/** Modules serve imports before it listens: the CLI, serve itself, both HTTP hosts and the workers. */
const START = ['src/cli/main.ts', 'src/cli/serve.ts', 'src/http/app.ts', 'src/checkout/app.ts', 'src/workers.ts'];

const LOADED_ON_USE: Array<{ name: string; specifier: RegExp; why: string }> = [
  {
    name: '@anthropic-ai/sdk',
    specifier: /^@anthropic-ai\/sdk(\/|$)/,
    why: 'loaded by the first Claude run (src/agent/select-model.ts)',
  },
  {
    name: '@modelcontextprotocol/sdk',
    specifier: /^@modelcontextprotocol\/sdk(\/|$)/,
    why: 'loaded by the first /mcp request (src/mcp/http.ts)',
  },
  { name: 'ioredis', specifier: /^ioredis$/, why: 'loaded with REDIS_URL only (src/rate-limit/redis-rate-limiter.ts)' },
  { name: 'pg', specifier: /^pg$/, why: 'loaded on Postgres only (src/db/connect.ts)' },
  { name: "chrono-node's main entry", specifier: /^chrono-node$/, why: "all 14 locales: import 'chrono-node/en'" },
  {
    name: "fastify's schema compilers",
    specifier: /^(ajv|@fastify\/ajv-compiler|fast-json-stringify)(\/|$)/,
    why: 'zod checks inputs',
  },
];

/**
 * Static imports and re-exports of a module that load something at run time: not `import type`
 * nor `export type`, not `import(...)`. An import of types only in braces still loads its module
 * under verbatimModuleSyntax, so it counts.
 */
function staticImports(source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm)) {
    if (!match[1]) found.push(match[2]!);
  }
  return found;
}

/** Every module reached from START by static imports: our files, and the package specifiers each imports. */
function reachedFromStart(): { files: Set<string>; packages: Map<string, string> } {
  const files = new Set<string>();
  const packages = new Map<string, string>();
  const queue = START.map((file) => resolve(ROOT, file));
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    for (const specifier of staticImports(readFileSync(file, 'utf8'))) {
      if (specifier.startsWith('.')) queue.push(resolve(dirname(file), specifier));
      else if (!specifier.startsWith('node:') && !packages.has(specifier)) {
        packages.set(specifier, relative(ROOT, file));
      }
    }
  }
  return { files, packages };
}

describe('what a start loads', () => {
  const { files, packages } = reachedFromStart();

  it('walks the app: the modules and packages every start needs are reached', () => {
    expect(files.size).toBeGreaterThan(100);
    expect([...packages.keys()]).toEqual(expect.arrayContaining(['fastify', 'zod', '@electric-sql/pglite', 'kysely']));
  });

  it.each(LOADED_ON_USE)('loads no $name at start: $why', ({ specifier }) => {
    const offending = [...packages].filter(([name]) => specifier.test(name)).map(([name, by]) => `${name} (by ${by})`);
    expect(offending).toEqual([]);
  });
});
