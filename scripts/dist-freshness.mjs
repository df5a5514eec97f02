// Whether dist/ (scripts/build.mjs) may run: it exists, its build finished, and every source it was
// built from is still exactly as it was then. bin/plainpay.mjs asks this on every start, so a
// developer who edits a file under src/ runs that edit (through tsx) and never the stale compiled
// copy. The build records each input's path, size and modification time; a start walks the same
// inputs (one lstat each, a few milliseconds) and runs dist/ only on an exact match. A file added,
// removed, edited, or replaced by an older copy (rsync -a, tar, cp -p) differs in one of the three.

import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DIST = join(ROOT, 'dist');
/** The bundled code (scripts/build.mjs); bin/plainpay.mjs runs its main.js. */
export const BUNDLE = join(DIST, 'bundle');
/** Written last by the build: { inputs, builtAt }. */
export const BUILD_INFO = join(DIST, 'build-info.json');
/** What dist/ is made of: bundled, or copied (files read at run time). */
export const SOURCE_DIRS = ['src', 'tools', 'migrations', 'prompts'];
/** The lock file too (the bundle holds a copy of viem and kysely), and the build's own rules. */
const SOURCE_FILES = ['package.json', 'package-lock.json', 'tsconfig.json', 'scripts/build.mjs'];

/**
 * Every input of the build: relative path → "size:mtimeMs". Tests are not part of the build, so
 * editing one does not send the service back to tsx. Throws if a file vanishes mid-walk.
 */
export function buildInputs() {
  const inputs = {};
  const add = (path) => {
    const stat = lstatSync(path);
    inputs[relative(ROOT, path)] = `${stat.size}:${stat.mtimeMs}`;
  };
  for (const file of SOURCE_FILES) add(join(ROOT, file));
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (!entry.name.endsWith('.test.ts')) add(path);
    }
  };
  for (const dir of SOURCE_DIRS) walk(join(ROOT, dir));
  return inputs;
}

/** True when dist/ is complete and built from exactly the sources here now. */
export function distIsFresh() {
  try {
    const built = JSON.parse(readFileSync(BUILD_INFO, 'utf8')).inputs;
    if (typeof built !== 'object' || built === null) return false;
    const now = buildInputs();
    const paths = Object.keys(now);
    return paths.length === Object.keys(built).length && paths.every((path) => built[path] === now[path]);
  } catch {
    // No build, an unfinished one, or a source that cannot be read (a dangling link, a file removed
    // during the walk): the sources it is.
    return false;
  }
}
