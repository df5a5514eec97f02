import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, type CDPSession, chromium, type Page } from 'playwright-core';

/**
 * Browser tests drive Debian's chromium (`apt-get install -y chromium`) through playwright-core;
 * Playwright's own browser download cannot work here (no network but the package registries).
 */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * The flags that work on these machines (STACK.md, node-svc.md): without the background
 * networking ones chromium keeps dialling Google's hosts through a closed network. Playwright
 * adds --headless and a fresh temporary --user-data-dir of its own on every launch.
 */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const ARTIFACTS_DIR = new URL('../../test-artifacts/', import.meta.url).pathname;

/**
 * Why the browser tests cannot run here, or undefined when they can. A missing chromium skips
 * them on a developer's machine with this message; in CI (CI=true, where .ci/run installs it)
 * they always run, so a missing browser fails loudly instead of passing silently.
 */
export function browserSkipReason(): string | undefined {
  if (existsSync(CHROMIUM_PATH)) return undefined;
  if (process.env.CI === 'true') return undefined;
  return `${CHROMIUM_PATH} not found: the browser tests are skipped. Install it with \`apt-get update && apt-get install -y chromium\` (CI installs it and always runs them).`;
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 });
}

/** A directory under test-artifacts/ for one suite's screenshots; created if missing. */
export function artifactsDir(name: string): string {
  const dir = join(ARTIFACTS_DIR, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

export interface TransferLog {
  /** Every request the page made, in order. */
  urls: string[];
  /** Bytes received over the network (headers and bodies, as sent) for finished requests. */
  totalBytes(): number;
  perUrl(): Array<{ url: string; bytes: number }>;
}

/**
 * Counts what a page transfers with the DevTools protocol: Network.loadingFinished's
 * encodedDataLength is the size on the wire (response headers plus the encoded body), what the
 * browser's network panel reports as "transferred".
 */
export async function recordTransfers(page: Page): Promise<TransferLog> {
  const cdp: CDPSession = await page.context().newCDPSession(page);
  const urls: string[] = [];
  const byId = new Map<string, string>();
  const bytes = new Map<string, number>();
  cdp.on('Network.requestWillBeSent', (event) => {
    byId.set(event.requestId, event.request.url);
    urls.push(event.request.url);
  });
  cdp.on('Network.loadingFinished', (event) => {
    bytes.set(event.requestId, (bytes.get(event.requestId) ?? 0) + event.encodedDataLength);
  });
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  return {
    urls,
    totalBytes: () => [...bytes.values()].reduce((a, b) => a + b, 0),
    perUrl: () => [...bytes.entries()].map(([id, n]) => ({ url: byId.get(id) ?? id, bytes: n })),
  };
}
