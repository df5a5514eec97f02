import { html, type SafeHtml } from '../../checkout/html.ts';
import type { ProviderRail } from '../../db/tables/rails.ts';
import { offeredRailsOf } from '../../payments/rails/attempts.ts';
import type { DashboardServices } from '../context.ts';
import type { DashboardSession } from '../sessions.ts';
import { table } from '../view.ts';

const NAMES: Record<ProviderRail, string> = { paystack: 'Paystack', mpesa: 'M-Pesa' };

/**
 * The Developers screen's "Payer rails" section (docs/rails.md): what this mode's checkouts offer,
 * read-only. The operator of the instance collects on every rail and sets its credentials from the
 * CLI; a dashboard session cannot, like an API key cannot.
 */
export async function railsSection(services: DashboardServices, session: DashboardSession): Promise<SafeHtml> {
  const offered = await offeredRailsOf(services, session);
  const mode = session.livemode ? 'live' : 'test';
  return html`<h2 id="payer-rails">Payer rails</h2>
<p class="muted">How payers pay this mode's checkouts. The operator of this plainpay instance collects the payer's money on every rail and credits you the stablecoin; rails are set up by the operator, not here.${session.livemode ? '' : ' Test mode always has the sandbox rail.'}</p>
${table(
  ['Rail', 'Currencies'],
  offered.map(
    (r) =>
      html`<tr data-rail="${r.rail}"><td>${NAMES[r.rail]}</td><td>${r.currencies.length > 0 ? r.currencies.join(', ') : 'none (the provider refused every currency)'}</td></tr>`,
  ),
  `No provider rail collects in ${mode} mode yet: ask the operator of this instance.`,
  'rails',
)}`;
}
