// The shape docs/architecture.md promises, checked: no module imports itself in a circle, core
// imports neither the runtime nor the policy nor the pipeline, policy never runs a tool, and no
// tool reaches for the runtime.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Each module's imports of our own modules: values only (`import type` vanishes when compiled). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of [...sources(join(ROOT, 'src')), ...sources(join(ROOT, 'tools'))]) {
    const text = readFileSync(file, 'utf8');
    const targets: string[] = [];
    for (const m of text.matchAll(/^(?:import|export)\s+(?!type\b)[^'"]*?from\s+'(\.[^']+)'/gm)) {
      const target = resolve(dirname(file), m[1]!);
      if (existsSync(target)) targets.push(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/** The cycles of a graph (its strongly connected components of more than one module). */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(relative(ROOT, w));
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** Every import (types too) from files under `from` of files under `to`, as "file → target". */
function importsBetween(from: string, to: string): string[] {
  const found: string[] = [];
  for (const file of sources(join(ROOT, from))) {
    for (const m of readFileSync(file, 'utf8').matchAll(/from\s+'(\.[^']+)'/g)) {
      const target = relative(ROOT, resolve(dirname(file), m[1]!));
      if (target.startsWith(`${to}/`) || target === to) found.push(`${relative(ROOT, file)} → ${target}`);
    }
  }
  return found;
}

describe('the architecture', () => {
  it('has no import cycles', () => {
    expect(cycles(importGraph())).toEqual([]);
  });

  it('finds a cycle when there is one (the check itself)', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    expect(cycles(graph)).toHaveLength(1);
  });

  it('core imports neither the runtime, the policy nor the pipeline', () => {
    expect(importsBetween('src/core', 'src/runtime.ts')).toEqual([]);
    expect(importsBetween('src/core', 'src/policy')).toEqual([]);
    expect(importsBetween('src/core', 'src/pipeline')).toEqual([]);
  });

  it('policy decides and never runs a tool; tools never reach the runtime or the pipeline', () => {
    expect(importsBetween('src/policy', 'src/pipeline')).toEqual([]);
    expect(importsBetween('tools', 'src/runtime.ts')).toEqual([]);
    expect(importsBetween('tools', 'src/pipeline')).toEqual([]);
  });
});
