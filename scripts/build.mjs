#!/usr/bin/env node
// Builds dist/: the JavaScript that `plainpay` runs (bin/plainpay.mjs), so that a start compiles no
// TypeScript, and the pre-migrated embedded database a first start copies instead of running
// initdb and every migration (src/db/database-image.ts).
//
//   node scripts/build.mjs      (npm run build: a failure exits 1)
//
// npm install and npm ci run it as `prepare` (package.json), where a failure, this file missing
// included (a Docker layer that copies package.json first), is a warning: the CLI then runs the
// TypeScript sources (bin/plainpay.mjs), so an install never fails for want of a build.
//
// esbuild (tsx's own, so no extra dependency) strips the types, and `npm run typecheck` checks
// them. It also bundles our code and the two pure-JavaScript libraries that are hundreds of small
// ES modules each (viem, kysely): loading those file by file was half a second of every start.
// Every other package stays outside, loaded from node_modules as before: those that read their own
// files (PGlite's wasm, Hardhat), the CommonJS ones, and zod, whose schemas we hand to the MCP and
// Anthropic SDKs: a second copy of it inside the bundle would not be the one they check against.
//
// Our code reads some files relative to its own module (migrations, prompts, checkout and
// dashboard assets, package.json). In the bundle every `import.meta.url` of ours is replaced by
// the URL the module would have at its own path under dist/ (dist/src/db/migrate.js, …), and
// those files are copied there, so each lookup lands where it does from src/.
// dist/build-info.json is written last: a dist/ without it is an unfinished build, never run.

import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BUILD_INFO, BUNDLE, buildInputs, DIST, ROOT, SOURCE_DIRS } from './dist-freshness.mjs';

/** Packages bundled (with everything they import): pure ES modules, many files each, used only by us. */
const BUNDLED = new Set(['viem', 'kysely']);
/** Optional native add-ons that bundled code requires inside try/catch. */
const NEVER_BUNDLED = new Set(['bufferutil', 'utf-8-validate']);

const started = performance.now();
// Taken before anything is read: a source saved while this runs no longer matches the build.
const inputs = buildInputs();

function step(line) {
  process.stdout.write(`plainpay build: ${line}\n`);
}

let esbuild;
try {
  const fromTsx = createRequire(createRequire(import.meta.url).resolve('tsx'));
  esbuild = await import(pathToFileURL(fromTsx.resolve('esbuild')).href);
} catch {
  step('esbuild (from tsx) was not found; skipped: plainpay runs from the TypeScript sources.');
  process.exit(0);
}

// The marker first: a start that comes while this runs goes to the sources, not to half a dist/.
// The database image is left for buildDatabaseImage, which takes its manifest away before the rest.
rmSync(BUILD_INFO, { force: true });
for (const entry of existsSync(DIST) ? readdirSync(DIST) : []) {
  if (!entry.startsWith('pgdata-image')) rmSync(join(DIST, entry), { recursive: true, force: true });
}
step('compiling and bundling to dist/ (types are checked by `npm run typecheck`, not here)…');

const moduleUrls = {
  name: 'module-urls',
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      if (args.path.split(sep).includes('node_modules')) return undefined;
      const compiledAt = join(DIST, relative(ROOT, args.path)).replace(/\.ts$/, '.js');
      const fromBundle = relative(BUNDLE, compiledAt).split(sep).join('/');
      const source = readFileSync(args.path, 'utf8');
      return {
        contents: source.replace(
          /\bimport\.meta\.url\b/g,
          `new URL(${JSON.stringify(fromBundle)}, import.meta.url).href`,
        ),
        loader: 'ts',
      };
    });
  },
};

const packagesOutside = {
  name: 'packages-outside',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('node:')) return { external: true };
      const name = packageName(args.path);
      if (NEVER_BUNDLED.has(name)) return { external: true };
      // Inside a bundled package everything it imports comes along: its own nested versions
      // (viem pins its @noble and @scure) would not be found from dist/ at run time.
      const fromPackage = args.importer.split(sep).includes('node_modules');
      if (fromPackage || BUNDLED.has(name)) return undefined;
      return { external: true };
    });
  },
};

// Rejects on an error (and prints it): the build then stops before writing build-info.json.
await esbuild.build({
  absWorkingDir: ROOT,
  entryPoints: { main: 'src/cli/main.ts', 'database-image': 'src/db/database-image.ts' },
  outdir: BUNDLE,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  // CommonJS inside the bundled packages calls require(); an ES module has none of its own.
  banner: {
    js: "import { createRequire as __plainpayRequire } from 'node:module';\nconst require = __plainpayRequire(import.meta.url);",
  },
  plugins: [moduleUrls, packagesOutside],
  logLevel: 'warning',
});

// Everything under the source folders that is not TypeScript (assets, SQL, prompts), plus the
// package.json that main.ts reads its version from and that Hardhat takes as the project root.
for (const dir of SOURCE_DIRS) {
  const from = join(ROOT, dir);
  if (!existsSync(from)) continue;
  for (const entry of readdirSync(from, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.name.endsWith('.ts')) continue;
    const file = join(entry.parentPath ?? entry.path, entry.name);
    const to = join(DIST, relative(ROOT, file));
    mkdirSync(dirname(to), { recursive: true });
    cpSync(file, to);
  }
}
cpSync(join(ROOT, 'package.json'), join(DIST, 'package.json'));

const { buildDatabaseImage, databaseImageIsCurrent, DATABASE_IMAGE_DIR } = await import(
  pathToFileURL(join(BUNDLE, 'database-image.js')).href
);
const imagePath = relative(ROOT, DATABASE_IMAGE_DIR);
if (databaseImageIsCurrent()) {
  step(`database image: ${imagePath} is current (same PGlite, same migrations); kept`);
} else {
  step('creating the pre-migrated embedded database (initdb and every migration, once)…');
  const image = await buildDatabaseImage();
  step(`database image: ${imagePath} (${image.migrations} migrations)`);
}

writeFileSync(BUILD_INFO, `${JSON.stringify({ builtAt: Date.now(), inputs }, null, 2)}\n`);
step(`done in ${((performance.now() - started) / 1000).toFixed(1)} s`);

function packageName(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}
