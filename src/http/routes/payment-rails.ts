import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { AppError } from '../../core/errors.ts';
import { PROVIDER_RAIL_NAMES } from '../../db/tables/rails.ts';
import {
  deleteRailCredentials,
  listRailConnections,
  mpesaCredentialsInput,
  parseRailCredentials,
  paystackCredentialsInput,
  type RailConnection,
  saveRailCredentials,
} from '../../payments/rails/credentials.ts';
import type { Runtime } from '../../runtime.ts';
import type { ApiOperation } from '../openapi.ts';
import { requestAuth } from '../plugins/auth.ts';

const PROVIDERS = PROVIDER_RAIL_NAMES;

const railView = z.object({
  object: z.literal('payment_rail'),
  rail: z.enum(PROVIDERS),
  livemode: z.boolean(),
  settings: z
    .record(z.string(), z.unknown())
    .describe('What identifies the connection without unlocking it: the last four of a key, the shortcode, …'),
  created: z.string(),
  updated_at: z.string().describe('When the connection was last saved.'),
  updated: z.string().describe('Deprecated: updated_at. Removed in the next release.'),
});

const railList = z.object({
  object: z.literal('list'),
  data: z.array(railView).describe('The rails connected in this mode. The sandbox rail (test mode) needs none.'),
});

export const paymentRailOperations: ApiOperation[] = [
  {
    method: 'GET',
    path: '/v1/payment_rails',
    operationId: 'list_payment_rails',
    summary: 'List the connected payer rails',
    description: "Paystack and M-Pesa connections of the key's account and mode. Secrets are never shown.",
    tag: 'payment rails',
    scope: 'keys',
    response: railList,
  },
  {
    method: 'PUT',
    path: '/v1/payment_rails/paystack',
    operationId: 'connect_paystack',
    summary: 'Connect Paystack',
    description:
      'Stores the Paystack secret key, sealed. Live mode takes sk_live_ keys only, test mode sk_test_ only. Set the Paystack dashboard webhook URL to {base_url}/hooks/paystack.',
    tag: 'payment rails',
    scope: 'keys',
    body: paystackCredentialsInput,
    response: railView,
  },
  {
    method: 'PUT',
    path: '/v1/payment_rails/mpesa',
    operationId: 'connect_mpesa',
    summary: 'Connect M-Pesa (Daraja STK Push)',
    description:
      "Stores the Daraja app's credentials and the shortcode's passkey, sealed. Live mode takes environment 'production' only, test mode 'sandbox' only.",
    tag: 'payment rails',
    scope: 'keys',
    body: mpesaCredentialsInput,
    response: railView,
  },
  ...PROVIDERS.map(
    (rail): ApiOperation => ({
      method: 'DELETE',
      path: `/v1/payment_rails/${rail}`,
      operationId: `disconnect_${rail}`,
      summary: `Disconnect ${rail === 'paystack' ? 'Paystack' : 'M-Pesa'}`,
      description:
        'New checkouts stop offering it at once. An attempt still open can no longer be confirmed, so disconnect when none is open.',
      tag: 'payment rails',
      scope: 'keys',
      response: z.object({ object: z.literal('payment_rail'), rail: z.literal(rail), deleted: z.literal(true) }),
      // The rail is in the path but not a parameter: not connected in this mode is a 404.
      errors: ['not_found'],
    }),
  ),
];

/**
 * A merchant connects Paystack and M-Pesa per mode (docs/rails.md). Provider keys are credentials
 * like API keys: the `keys` scope manages them.
 */
export function paymentRailRoutes(runtime: Runtime): FastifyPluginAsync {
  return async (app) => {
    const access = { config: { auth: { scope: 'keys' as const } } };

    app.get('/v1/payment_rails', access, async (request) => {
      const auth = requestAuth(request);
      const rows = await listRailConnections(runtime.db, auth);
      return { object: 'list', data: rows.map(present) };
    });

    for (const rail of PROVIDERS) {
      app.put(`/v1/payment_rails/${rail}`, access, async (request) => {
        const auth = requestAuth(request);
        const credentials = parseRailCredentials(rail, auth.livemode, request.body ?? {});
        return present(
          await saveRailCredentials(runtime.db, runtime.secretBox, auth, rail, credentials, runtime.clock.now()),
        );
      });
    }

    for (const rail of PROVIDERS) {
      app.delete(`/v1/payment_rails/${rail}`, access, async (request) => {
        const auth = requestAuth(request);
        if (!(await deleteRailCredentials(runtime.db, auth, rail))) {
          throw new AppError('not_found', `${rail} is not connected in this mode.`, { param: 'rail' });
        }
        return { object: 'payment_rail', rail, deleted: true };
      });
    }
  };
}

function present(connection: RailConnection) {
  return {
    object: 'payment_rail' as const,
    rail: connection.rail,
    livemode: connection.livemode,
    settings: connection.settings,
    created: connection.createdAt.toISOString(),
    updated_at: connection.updatedAt.toISOString(),
    updated: connection.updatedAt.toISOString(),
  };
}
