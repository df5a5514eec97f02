import { describe, expect, it } from 'vitest';
import { AppError } from '../core/errors.ts';
import { checkGrounding, evidenceFromInstruction, type RunEvidence, withToolResult } from './grounding.ts';

const NOW = new Date('2026-03-10T12:00:00Z');
const SUPPLIER = '0x1111111111111111111111111111111111111111';
const INVENTED = '0x9999999999999999999999999999999999999999';
const IN_NOTE = '0x7777777777777777777777777777777777777777';
const A = '0x2222222222222222222222222222222222222222';
const B = '0x3333333333333333333333333333333333333333';
const C = '0x4444444444444444444444444444444444444444';
const PAYMENT = 'pay_4fT0q9ZkLw2mXbV7rN1sQe';

/** A payment as get_payment returns it, with an address and an amount in its free text. */
const payment = {
  id: PAYMENT,
  object: 'payment',
  status: 'settled',
  amount: 10_000,
  currency: 'NGN',
  amount_refunded: 0,
  description: `Supplier invoice, pay ${IN_NOTE}`,
  merchant_name: IN_NOTE,
  reference: 'order-1234',
  metadata: { supplier_address: IN_NOTE, amount: 4321, note: { to_address: IN_NOTE } },
  payout_address: null,
  settlement: { asset: 'USDC', amount: 6.25, address: null },
};

function refusal(call: () => void): AppError {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error('expected the call to be refused');
}

const evidence = (instruction: string, ...results: unknown[]): RunEvidence =>
  results.reduce<RunEvidence>((e, output) => withToolResult(e, output), evidenceFromInstruction(instruction, NOW));

describe('checkGrounding: recipients', () => {
  it('refuses an address that appears only in a payment description (or other free text)', () => {
    const e = evidence(`pay the supplier from ${PAYMENT}'s note 10 USDC`, payment);
    const error = refusal(() => checkGrounding('create_payout', { amount: 10, to_address: IN_NOTE }, e));
    expect(error.code).toBe('ungrounded_argument');
    expect(error.param).toBe('to_address');
    expect(error.message).toContain(IN_NOTE);
    expect(error.message).toContain('does not appear in your instruction or in data read in this run');
  });

  it('refuses an invented address', () => {
    const e = evidence('pay 10 USDC to the usual supplier');
    expect(refusal(() => checkGrounding('create_payout', { amount: 10, to_address: INVENTED }, e)).code).toBe(
      'ungrounded_argument',
    );
  });

  it('accepts an address written in the instruction, in any case', () => {
    const e = evidence(`pay 10 USDC to ${SUPPLIER.toUpperCase().replace('0X', '0x')}`);
    expect(() => checkGrounding('create_payout', { amount: 10, to_address: SUPPLIER }, e)).not.toThrow();
  });

  it("accepts an address from a typed field of a result (a payout's to_address)", () => {
    const e = evidence('pay that supplier 10 USDC again', { id: 'po_4fT0q9ZkLw2mXbV7rN1sQe', to_address: B });
    expect(() => checkGrounding('create_payout', { amount: 10, to_address: B }, e)).not.toThrow();
  });

  it('names the split leg that is not grounded', () => {
    const e = evidence(`split 100 USDC 70/30 between ${A} and ${B}`);
    const error = refusal(() =>
      checkGrounding(
        'split_revenue',
        {
          amount: 100,
          splits: [
            { to_address: A, share_bps: 7000 },
            { to_address: INVENTED, share_bps: 3000 },
          ],
        },
        e,
      ),
    );
    expect(error.param).toBe('splits.1.to_address');
  });
});

describe('checkGrounding: payment ids', () => {
  it('a full refund needs only the payment id from the instruction', () => {
    expect(() =>
      checkGrounding('refund_payment', { payment_id: PAYMENT }, evidence(`refund ${PAYMENT}`)),
    ).not.toThrow();
  });

  it('refuses a payment id from nowhere', () => {
    const error = refusal(() =>
      checkGrounding('refund_payment', { payment_id: PAYMENT }, evidence('refund the last one')),
    );
    expect(error.param).toBe('payment_id');
  });
});

describe('checkGrounding: amounts', () => {
  it("half of pay_X, with the payment's typed amount read earlier", () => {
    const e = evidence(`refund half of ${PAYMENT}`, payment);
    expect(() => checkGrounding('refund_payment', { payment_id: PAYMENT, amount: 5000 }, e)).not.toThrow();
    expect(() => checkGrounding('refund_payment', { payment_id: PAYMENT, amount: 5001 }, e)).toThrow(AppError);
  });

  it('refuses an amount found only in metadata', () => {
    const e = evidence(`refund part of ${PAYMENT}`, payment);
    const error = refusal(() => checkGrounding('refund_payment', { payment_id: PAYMENT, amount: 4321 }, e));
    expect(error.param).toBe('amount');
  });

  it('"5k" is 5000', () => {
    const e = evidence(`pay out 5k USDC to ${SUPPLIER}`);
    expect(() => checkGrounding('create_payout', { amount: 5000, to_address: SUPPLIER }, e)).not.toThrow();
    expect(() => checkGrounding('create_payout', { amount: 5, to_address: SUPPLIER }, e)).toThrow(AppError);
  });

  it('a read amount less a written one ("minus the 500 naira delivery fee")', () => {
    const e = evidence(`refund ${PAYMENT} minus the 500 naira delivery fee`, payment);
    expect(() => checkGrounding('refund_payment', { payment_id: PAYMENT, amount: 9500 }, e)).not.toThrow();
    expect(() => checkGrounding('refund_payment', { payment_id: PAYMENT, amount: 9000 }, e)).toThrow(AppError);
  });

  it('neither reading of "5.000" (it could be 5 or 5,000), in any currency: the model must ask', () => {
    const e = evidence(`pay out 5.000 USDC to ${SUPPLIER}`);
    expect(() => checkGrounding('create_payout', { amount: 5, to_address: SUPPLIER }, e)).toThrow(AppError);
    expect(() => checkGrounding('create_payout', { amount: 5000, to_address: SUPPLIER }, e)).toThrow(AppError);
    const naira = evidence(`refund 5.000 naira of ${PAYMENT}`, payment);
    expect(() => checkGrounding('refund_payment', { payment_id: PAYMENT, amount: 5000 }, naira)).toThrow(AppError);
  });

  it('an exponent, look-alike letters or a mixed numeral ground nothing (the same reader as the planner)', () => {
    for (const written of ['1e3', '1O0', '1k5'])
      for (const amount of [1, 1000, 100, 15, 1500, 10]) {
        const e = evidence(`pay out ${written} USDC to ${SUPPLIER}`);
        expect(() => checkGrounding('create_payout', { amount, to_address: SUPPLIER }, e), written).toThrow(AppError);
      }
    // A written figure grounds itself only, not itself rounded to the currency (found by the fuzzer).
    const precise = evidence(`pay out 1.0000001 USDC to ${SUPPLIER}`);
    expect(() => checkGrounding('create_payout', { amount: 1, to_address: SUPPLIER }, precise)).toThrow(AppError);
    const e = evidence(`pay out 2 hundred USDC to ${SUPPLIER}`);
    expect(() => checkGrounding('create_payout', { amount: 200, to_address: SUPPLIER }, e)).not.toThrow();
    expect(() => checkGrounding('create_payout', { amount: 2, to_address: SUPPLIER }, e)).toThrow(AppError);
  });

  it('counts and other numbers in results ground nothing; a write echoes nothing back as evidence', () => {
    const e = withToolResult(evidence(`pay ${SUPPLIER} what we took yesterday`), {
      object: 'revenue',
      count: 7,
      settlement_amount: 12.5,
      chain_id: 31337,
    });
    expect(() => checkGrounding('create_payout', { amount: 12.5, to_address: SUPPLIER }, e)).not.toThrow();
    expect(() => checkGrounding('create_payout', { amount: 7, to_address: SUPPLIER }, e)).toThrow(AppError);
    expect(() => checkGrounding('create_payout', { amount: 31337, to_address: SUPPLIER }, e)).toThrow(AppError);
  });

  it('the input of a held action (list_pending_confirmations) is not evidence', () => {
    const e = withToolResult(evidence('what is waiting for approval? pay the first one again'), {
      object: 'list',
      data: [{ id: 'conf_x', tool: 'create_payout', input: { amount: 900, to_address: A } }],
    });
    expect(() => checkGrounding('create_payout', { amount: 900, to_address: A }, e)).toThrow(AppError);
  });

  it('a percentage of a typed amount, compared exactly (no float drift)', () => {
    const e = evidence(`pay 30% of ${PAYMENT}'s settlement to ${SUPPLIER}`, payment);
    // 6.25 × 0.3 = 1.875 exactly.
    expect(() => checkGrounding('create_payout', { amount: 1.875, to_address: SUPPLIER }, e)).not.toThrow();
    expect(() => checkGrounding('create_payout', { amount: 1.88, to_address: SUPPLIER }, e)).toThrow(AppError);
  });

  it('an equal division, rounded to the currency only when it has no exact value', () => {
    const e = evidence(`split 100 USDC equally between ${A}, ${B} and ${C} as three payouts`);
    expect(() => checkGrounding('create_payout', { amount: 33.333333, to_address: A }, e)).not.toThrow();
    expect(() => checkGrounding('create_payout', { amount: 33.333334, to_address: B }, e)).not.toThrow();
    expect(() => checkGrounding('create_payout', { amount: 33, to_address: C }, e)).toThrow(AppError);
  });

  it('what is left of a partly refunded payment', () => {
    const e = evidence(`refund the rest of ${PAYMENT}`, { ...payment, amount_refunded: 2500 });
    expect(() => checkGrounding('refund_payment', { payment_id: PAYMENT, amount: 7500 }, e)).not.toThrow();
  });
});

describe('checkGrounding: shares', () => {
  const split = (shares: number[], addresses = [A, B, C]) => ({
    amount: 100,
    splits: shares.map((share_bps, i) => ({ to_address: addresses[i], share_bps })),
  });

  it('equal shares only when the instruction asks for equal parts', () => {
    const asked = evidence(`split 100 USDC 70/30 between ${A} and ${B}`);
    expect(() => checkGrounding('split_revenue', split([5000, 5000], [A, B]), asked)).toThrow(AppError);
    expect(() => checkGrounding('split_revenue', split([7000, 3000], [A, B]), asked)).not.toThrow();
  });

  it('7000/3000 from "70/30"', () => {
    const e = evidence(`split 100 USDC 70/30 between ${A} and ${B}`);
    expect(() => checkGrounding('split_revenue', split([7000, 3000]), e)).not.toThrow();
  });

  it('equal parts (share_parts) only when the instruction asks for equal parts, every leg the same', () => {
    const parts = (values: number[], addresses = [A, B, C]) => ({
      amount: 100,
      splits: values.map((share_parts, i) => ({ to_address: addresses[i], share_parts })),
    });
    const e = evidence(`split 100 USDC three ways between ${A}, ${B} and ${C}`);
    expect(() => checkGrounding('split_revenue', parts([1, 1, 1]), e)).not.toThrow();
    expect(() => checkGrounding('split_revenue', parts([2, 1, 1]), e)).toThrow(AppError);
    const unequal = evidence(`split 100 USDC between ${A}, ${B} and ${C}`);
    expect(() => checkGrounding('split_revenue', parts([1, 1, 1]), unequal)).toThrow(AppError);
    const ratio = evidence(`split 100 USDC 70/30 between ${A} and ${B}`);
    expect(() => checkGrounding('split_revenue', parts([70, 30], [A, B]), ratio)).not.toThrow();
  });

  it('3334/3333/3333 for "three ways"', () => {
    const e = evidence(`split 100 USDC three ways between ${A}, ${B} and ${C}`);
    expect(() => checkGrounding('split_revenue', split([3334, 3333, 3333]), e)).not.toThrow();
  });

  it('refuses 6000 when nothing says 60', () => {
    const e = evidence(`split 100 USDC between ${A} and ${B}`);
    const error = refusal(() => checkGrounding('split_revenue', split([6000, 4000]), e));
    expect(error.param).toBe('splits.0.share_bps');
  });

  it('a leg amount written in the instruction grounds its share', () => {
    const e = evidence(`split 100 USDC: 60 to ${A} and 40 to ${B}`);
    expect(() => checkGrounding('split_revenue', split([6000, 4000]), e)).not.toThrow();
  });

  it('a fraction as a share', () => {
    const e = evidence(`split ${PAYMENT}: a quarter to ${A}, three quarters to ${B}`);
    expect(() =>
      checkGrounding(
        'split_revenue',
        {
          payment_id: PAYMENT,
          splits: [
            { to_address: A, share_bps: 2500 },
            { to_address: B, share_bps: 7500 },
          ],
        },
        e,
      ),
    ).not.toThrow();
  });
});

describe('checkGrounding: other tools', () => {
  it('does not check reads or writes that move nothing', () => {
    expect(() => checkGrounding('get_payment', { payment_id: PAYMENT }, evidence('status?'))).not.toThrow();
  });
});

describe('issue 32: currencies, corrections and what holds money back', () => {
  it('a number grounds amounts in its own currency only', () => {
    const naira = evidence(`the client paid ₦50,000; pay the supplier ${SUPPLIER} his share`);
    expect(() => checkGrounding('create_payout', { amount: 50_000, to_address: SUPPLIER }, naira)).toThrow(AppError);
    const dollars = evidence(`pay the supplier ${SUPPLIER} $50`);
    expect(() => checkGrounding('create_payout', { amount: 50, to_address: SUPPLIER }, dollars)).not.toThrow();
    const bare = evidence(`pay the supplier ${SUPPLIER} 50`);
    expect(() => checkGrounding('create_payout', { amount: 50, to_address: SUPPLIER }, bare)).not.toThrow();
    // A read payment's naira amount grounds a refund of it, not a USDC payout; its USDC settlement does.
    const read = evidence(`refund ${PAYMENT} and pay ${SUPPLIER} what it settled`, payment);
    expect(() => checkGrounding('create_payout', { amount: 10_000, to_address: SUPPLIER }, read)).toThrow(AppError);
    expect(() => checkGrounding('create_payout', { amount: 6.25, to_address: SUPPLIER }, read)).not.toThrow();
    expect(() => checkGrounding('refund_payment', { payment_id: PAYMENT, amount: 10_000 }, read)).not.toThrow();
    const cedis = evidence(`refund 500 cedis of ${PAYMENT}`, payment);
    expect(() => checkGrounding('refund_payment', { payment_id: PAYMENT, amount: 500 }, cedis)).toThrow(AppError);
  });

  it('in a correction only the corrected value grounds; a value ruled out by "not" grounds nothing', () => {
    const e = evidence(`send 3k usdc to ${SUPPLIER}… no make it 2k`);
    expect(() => checkGrounding('create_payout', { amount: 2000, to_address: SUPPLIER }, e)).not.toThrow();
    expect(() => checkGrounding('create_payout', { amount: 3000, to_address: SUPPLIER }, e)).toThrow(AppError);
    const to = evidence(`send 25 usdc to ${A} — no sorry, to ${B} not ${A}`);
    expect(() => checkGrounding('create_payout', { amount: 25, to_address: B }, to)).not.toThrow();
    expect(() => checkGrounding('create_payout', { amount: 25, to_address: A }, to)).toThrow(AppError);
  });

  it('a condition, wait, negation or repetition the grammar cannot place holds every money call', () => {
    for (const instruction of [
      `send 50 usdc to ${SUPPLIER} but only after delivery`,
      `don't actually send 50 usdc to ${SUPPLIER}`,
      `send 50 usdc to ${SUPPLIER}, wait until Friday`,
      `pay ${SUPPLIER} 50 usdc twice`,
      `pay ${SUPPLIER} 50 usdc on Friday`,
    ]) {
      const error = refusal(() =>
        checkGrounding('create_payout', { amount: 50, to_address: SUPPLIER }, evidence(instruction)),
      );
      expect(error.code, instruction).toBe('unclear_instruction');
    }
    // A read moves nothing, and a plain request holds nothing back.
    const e = evidence(`send 50 usdc to ${SUPPLIER} but only after delivery`);
    expect(() => checkGrounding('get_balance', {}, e)).not.toThrow();
    expect(evidence(`pay 50 usdc to ${SUPPLIER} for the logo design`).holds).toEqual([]);
  });
});
