// Paid payments in bulk for settlement tests and the benchmark: created through the create_payment
// tool (the same handler as POST /v1/payments) and paid on the sandbox rail (the same function as
// the test helper), without HTTP in between so that hundreds of them take a moment.

import { randomBytes } from 'node:crypto';
import { createPayment } from '../../tools/create-payment.ts';
import { executedOutput, executeTool } from '../../src/pipeline/execute-tool.ts';
import type { PaymentRow } from '../../src/db/database.ts';
import { findPaymentById } from '../../src/db/repositories/payments.ts';
import { paySandbox } from '../../src/payments/sandbox-rail.ts';
import type { Runtime } from '../../src/runtime.ts';

export interface PaidPaymentSpec {
  /** Major units, e.g. 5000 NGN. */
  amount: number;
  currency: string;
  payoutAddress?: string | null;
  metadata?: Record<string, unknown>;
  reference?: string;
}

/** Creates and pays one payment per spec (in order); returns the paid rows. */
export async function createPaidPayments(
  runtime: Runtime,
  accountId: string,
  specs: readonly PaidPaymentSpec[],
): Promise<PaymentRow[]> {
  const actor = {
    accountId,
    livemode: false,
    keyId: null,
    scopes: new Set(['payments:write', 'payments:read']),
    channel: 'system' as const,
  };
  const paid: PaymentRow[] = [];
  for (const spec of specs) {
    const output = executedOutput(
      await executeTool(
        createPayment,
        {
          amount: spec.amount,
          currency: spec.currency,
          redirect_url: 'https://shop.example/thanks',
          reference: spec.reference ?? `ref_${randomBytes(6).toString('hex')}`,
          ...(spec.payoutAddress ? { payout_address: spec.payoutAddress } : {}),
          ...(spec.metadata ? { metadata: spec.metadata } : {}),
        },
        { runtime, actor },
      ),
    );
    await paySandbox(runtime, actor, output.id, 'succeeded');
    const payment = await findPaymentById(runtime.db, output.id);
    if (!payment) throw new Error(`payment ${output.id} vanished`);
    paid.push(payment);
  }
  return paid;
}

/** `count` specs spreading payments over `addresses` round-robin, amounts varied (all NGN). */
export function spreadOver(addresses: readonly string[], count: number, currency = 'NGN'): PaidPaymentSpec[] {
  return Array.from({ length: count }, (_, i) => ({
    amount: 1000 + ((i * 7919) % 50_000) + (i % 100) / 100,
    currency,
    payoutAddress: addresses[i % addresses.length] ?? null,
    metadata: { order: `order_${i}`, line_items: [{ sku: 'A', qty: (i % 3) + 1 }] },
  }));
}

/** Sum of settlement amounts per address (lower-cased), from the payments' locked quotes. */
export function expectedByAddress(payments: readonly PaymentRow[]): Map<string, bigint> {
  const sums = new Map<string, bigint>();
  for (const p of payments) {
    if (!p.payout_address) continue;
    const key = p.payout_address.toLowerCase();
    sums.set(key, (sums.get(key) ?? 0n) + p.settlement_minor);
  }
  return sums;
}
