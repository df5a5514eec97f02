import { z } from 'zod';
import { AppError } from '../src/core/errors.ts';
import { defineTool } from '../src/core/tool.ts';
import { findPayment } from '../src/db/repositories/payments.ts';
import { presentPayment } from '../src/domain/present-payment.ts';
import { paymentOutput } from './payment-output.ts';
import { paymentId } from './schemas.ts';

export const getPayment = defineTool({
  name: 'get_payment',
  title: 'Get a payment',
  description:
    'Reads one payment of this account by id: status, amounts, the locked quote, settlement details and metadata.',
  input: z.strictObject({ payment_id: paymentId }),
  output: paymentOutput,
  effect: 'read',
  scope: 'payments:read',
  http: { method: 'GET', path: '/v1/payments/:payment_id' },
  async handler({ payment_id }, { config, db, actor }) {
    const row = await findPayment(db, actor, payment_id);
    // Another account's or the other mode's payment does not exist for this caller: 404, not 403.
    if (!row) throw new AppError('not_found', `No such payment: '${payment_id}'.`, { param: 'payment_id' });
    return presentPayment(config, row);
  },
});
