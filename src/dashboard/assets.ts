import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { StaticAsset } from '../checkout/assets.ts';

/**
 * The dashboard's one stylesheet, read once and served from the API host under a content hash
 * (/dashboard/assets/dashboard.<hash>.css), so it can be cached for good and the CSP can say
 * style-src 'self'. The dashboard has no script.
 */
export interface DashboardAssets {
  css: StaticAsset;
}

let loaded: DashboardAssets | undefined;

export function dashboardAssets(): DashboardAssets {
  if (!loaded) {
    const body = readFileSync(new URL('./assets/dashboard.css', import.meta.url));
    const hash = createHash('sha256').update(body).digest('hex').slice(0, 10);
    loaded = { css: { path: `/dashboard/assets/dashboard.${hash}.css`, contentType: 'text/css; charset=utf-8', body } };
  }
  return loaded;
}
