import type { FastifyInstance } from 'fastify';
import { html, type SafeHtml } from '../../checkout/html.ts';
import { AppError } from '../../core/errors.ts';
import { PROVIDER_RAIL_NAMES, type ProviderRail } from '../../db/tables/rails.ts';
import {
  deleteRailCredentials,
  listRailConnections,
  parseRailCredentials,
  saveRailCredentials,
} from '../../payments/rails/credentials.ts';
import type { Runtime } from '../../runtime.ts';
import { type DashboardDeps, formOf, sessionOf } from '../context.ts';
import { CSRF_FIELD } from '../csrf.ts';
import type { DashboardSession } from '../sessions.ts';
import { badge, csrfField, maybe, table, time } from '../view.ts';

/**
 * The Developers screen's "Payer rails" section (docs/rails.md): connect Paystack and M-Pesa for
 * the signed-in mode, see what is connected (never a secret), disconnect. The same rules as
 * PUT /v1/payment_rails/…: the `keys` scope, and only keys of the session's own mode.
 */
export const RAIL_DONE: Record<string, string> = {
  'rail-connected': 'The payer rail is connected. New checkouts of this mode offer it.',
  'rail-disconnected': 'The payer rail is disconnected. New checkouts no longer offer it.',
};

const NAMES: Record<ProviderRail, string> = { paystack: 'Paystack', mpesa: 'M-Pesa' };

export async function railsSection(runtime: Runtime, session: DashboardSession): Promise<SafeHtml> {
  const connected = await listRailConnections(runtime.db, session);
  const mode = session.livemode ? 'live' : 'test';
  return html`<h2 id="payer-rails">Payer rails</h2>
<p class="muted">How payers pay this mode's checkouts. ${session.livemode ? 'Live mode takes live Paystack keys (sk_live_…) and Daraja production credentials.' : 'Test mode always has the sandbox rail; it takes test Paystack keys (sk_test_…) and Daraja sandbox credentials beside it.'} Secrets are sealed and never shown again.</p>
${table(
  ['Rail', 'Mode', 'Settings', 'Connected', 'Updated', ''],
  connected.map(
    (c) => html`<tr data-rail="${c.rail}">
<td>${NAMES[c.rail]} ${badge('connected')}</td>
<td>${c.livemode ? 'live' : 'test'}</td>
<td>${Object.entries(c.settings).map(([k, v]) => html`<code>${k}</code>: ${maybe(v === null ? null : String(v))}<br>`)}</td>
<td>${time(c.createdAt)}</td>
<td>${time(c.updatedAt)}</td>
<td><form method="post" action="/dashboard/developers/rails/${c.rail}/disconnect">${csrfField(session)}<button type="submit" class="danger">Disconnect</button></form></td>
</tr>`,
  ),
  `No payer rail is connected in ${mode} mode.`,
  'rails',
)}
<form method="post" action="/dashboard/developers/rails/paystack" class="card" id="connect-paystack">
${csrfField(session)}
<h3>Connect Paystack</h3>
<div class="field"><label for="paystack-secret">Secret key</label><input type="password" class="wide" id="paystack-secret" name="secret_key" autocomplete="off" required placeholder="${session.livemode ? 'sk_live_…' : 'sk_test_…'}"></div>
<div class="field"><label for="paystack-public">Public key (optional)</label><input type="text" class="wide" id="paystack-public" name="public_key" autocomplete="off" placeholder="${session.livemode ? 'pk_live_…' : 'pk_test_…'}"></div>
<p class="muted">Then set the webhook URL on Paystack's dashboard to <code>${runtime.config.publicBaseUrl}/hooks/paystack</code>.</p>
<button type="submit" class="primary">Connect Paystack</button>
</form>
<form method="post" action="/dashboard/developers/rails/mpesa" class="card" id="connect-mpesa">
${csrfField(session)}
<h3>Connect M-Pesa (Daraja ${session.livemode ? 'production' : 'sandbox'})</h3>
<div class="field"><label for="mpesa-key">Consumer key</label><input type="text" class="wide" id="mpesa-key" name="consumer_key" autocomplete="off" required></div>
<div class="field"><label for="mpesa-secret">Consumer secret</label><input type="password" class="wide" id="mpesa-secret" name="consumer_secret" autocomplete="off" required></div>
<div class="field"><label for="mpesa-shortcode">Shortcode</label><input type="text" id="mpesa-shortcode" name="shortcode" inputmode="numeric" required></div>
<div class="field"><label for="mpesa-passkey">Passkey</label><input type="password" class="wide" id="mpesa-passkey" name="passkey" autocomplete="off" required></div>
<div class="field"><label for="mpesa-type">Type</label><select id="mpesa-type" name="transaction_type"><option value="CustomerPayBillOnline">Paybill</option><option value="CustomerBuyGoodsOnline">Till (Buy Goods)</option></select></div>
<div class="field"><label for="mpesa-party-b">Till number, if it differs from the shortcode</label><input type="text" id="mpesa-party-b" name="party_b" inputmode="numeric"></div>
<button type="submit" class="primary">Connect M-Pesa</button>
</form>`;
}

export function registerRails(app: FastifyInstance, deps: DashboardDeps): void {
  const { runtime } = deps;
  const keys = { dashboard: { scopes: ['keys'] as const } };

  for (const rail of PROVIDER_RAIL_NAMES) {
    app.post(`/developers/rails/${rail}`, { config: keys }, async (request, reply) => {
      const session = sessionOf(request);
      const form = formOf(request);
      // The form's fields, as the API's body: empty optional fields are left out.
      const body: Record<string, string> = {};
      for (const [name, value] of form) {
        if (name === CSRF_FIELD || value.trim() === '') continue;
        body[name] = value.trim();
      }
      if (rail === 'mpesa') body.environment = session.livemode ? 'production' : 'sandbox';
      const credentials = parseRailCredentials(rail, session.livemode, body);
      await saveRailCredentials(runtime.db, runtime.secretBox, session, rail, credentials, runtime.clock.now());
      return reply.redirect('/dashboard/developers?done=rail-connected#payer-rails', 303);
    });

    app.post(`/developers/rails/${rail}/disconnect`, { config: keys }, async (request, reply) => {
      const session = sessionOf(request);
      if (!(await deleteRailCredentials(runtime.db, session, rail))) {
        throw new AppError('not_found', `${NAMES[rail]} is not connected in this mode.`);
      }
      return reply.redirect('/dashboard/developers?done=rail-disconnected#payer-rails', 303);
    });
  }
}
