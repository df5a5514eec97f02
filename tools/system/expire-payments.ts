import { z } from 'zod';
import { defineTool } from '../../src/core/tool.ts';
import { inScope, uniqueScopes } from './scopes.ts';
import { lockOfferedLapsedSessions } from '../../src/db/repositories/payments.ts';
import { insertEvent } from '../../src/db/repositories/events.ts';
import { transitionPayment } from '../../src/db/money-writes/payments.ts';
import { presentPayment } from '../../src/domain/present-payment.ts';

/** Most sessions one run may be offered. */
export const MAX_OFFERED_SESSIONS = 1000;

const expiredLine = z.object({ payment_id: z.string(), account_id: z.string(), livemode: z.boolean() });

/**
 * Moves checkout sessions whose ttl has lapsed from `pending` to `expired`, each with its
 * payment.expired event. Run by the expiry job (src/payments/expiry.ts decides which to offer).
 * Sessions another run holds are skipped (SKIP LOCKED); the compare-and-set means a payment paid at
 * the last moment is never expired.
 */
export const expirePayments = defineTool({
  name: 'expire_payments',
  title: 'Expire lapsed checkout sessions',
  description: 'Expires pending payments whose checkout session has lapsed.',
  input: z.strictObject({
    payment_ids: z.array(z.string().min(1).max(100)).min(1).max(MAX_OFFERED_SESSIONS),
    limit: z.number().int().min(1).max(MAX_OFFERED_SESSIONS),
  }),
  output: z.object({ expired: z.array(expiredLine) }),
  effect: 'write',
  scope: 'payments:write',
  system: {
    // As start_payment_settlements: the run's sessions are locked first (SKIP LOCKED), so it takes
    // only the free action-log locks and leaves the other accounts' sessions to the next run.
    busyAccounts: 'skip',
    async accounts(input, { db, now }) {
      return uniqueScopes(await lockOfferedLapsedSessions(db, input, now));
    },
    recordFor(input, output, scope) {
      const expired = output.expired.filter((p) => inScope(p, scope));
      if (expired.length === 0) return undefined;
      return { input: { ...input, payment_ids: expired.map((p) => p.payment_id) }, result: { expired } };
    },
  },
  async handler(input, { db, now, config, scopes = [] }) {
    if (scopes.length === 0) return { expired: [] };
    const due = await lockOfferedLapsedSessions(db, input, now, scopes);
    const expired: z.output<typeof expiredLine>[] = [];
    for (const { id } of due) {
      const row = await transitionPayment(db, id, 'pending', 'expired', { expired_at: now }, now);
      if (!row) continue;
      const view = presentPayment(config, row);
      await insertEvent(db, {
        accountId: row.account_id,
        livemode: row.livemode,
        type: 'payment.expired',
        objectId: row.id,
        data: { object: view, reference: view.reference, metadata: view.metadata },
        webhookUrl: row.webhook_url,
        createdAt: now,
      });
      expired.push({ payment_id: row.id, account_id: row.account_id, livemode: row.livemode });
    }
    return { expired };
  },
});
