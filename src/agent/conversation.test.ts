import { describe, expect, it } from 'vitest';
import { conversationInstruction, readReply, withNewAmount } from './conversation.ts';

const NOW = new Date('2026-11-29T10:00:00Z');
const ADDRESS = '0x3333333333333333333333333333333333333333';

describe('readReply: what an answer to a question says', () => {
  it.each(['yes', 'Yes please!', 'ok.', 'OK', 'go ahead 👍', 'Sí', 'ndiyo', "that's right", 'Correct'])(
    '%s is a yes',
    (answer) => {
      expect(readReply(answer, NOW)).toEqual({ kind: 'affirm' });
    },
  );

  it.each(['no', 'No.', 'cancel', 'Cancel it', 'never mind', 'hapana'])('%s cancels', (answer) => {
    expect(readReply(answer, NOW)).toEqual({ kind: 'cancel' });
  });

  it('a new amount is read by the exact number reader, with the currency written beside it', () => {
    expect(readReply('make it 2000', NOW)).toEqual({ kind: 'amount', amount: '2000', currency: undefined });
    expect(readReply('2,000 instead', NOW)).toEqual({ kind: 'amount', amount: '2000', currency: undefined });
    expect(readReply('no, 1.5k USDC please', NOW)).toEqual({ kind: 'amount', amount: '1500', currency: 'USDC' });
  });

  it.each([
    'make it 5.000', // reads two ways
    'make it 1e3', // exponent
    'make it 1O0', // a letter for a digit
    'yes but only after delivery', // a condition
    'yes, and pay 5 more to 0x1', // more than an answer
    'make it 2000 tomorrow', // a date
    '2000 or 3000', // two amounts
  ])('%s is conversation, not a yes or an amount', (answer) => {
    expect(readReply(answer, NOW)).toEqual({ kind: 'conversation' });
  });
});

describe('withNewAmount', () => {
  const payout = { tool: 'create_payout', input: { amount: 50, to_address: ADDRESS } };

  it('sets the one proposed amount', () => {
    expect(withNewAmount([payout], { kind: 'amount', amount: '20.5', currency: 'USDC' })).toEqual([
      { tool: 'create_payout', input: { amount: 20.5, to_address: ADDRESS } },
    ]);
  });

  it('applies to nothing when two calls have amounts, none has, or the currency cannot be a payout', () => {
    expect(withNewAmount([payout, payout], { kind: 'amount', amount: '20', currency: undefined })).toBeUndefined();
    expect(
      withNewAmount([{ tool: 'refund_payment', input: { payment_id: 'pay_x' } }], {
        kind: 'amount',
        amount: '20',
        currency: undefined,
      }),
    ).toBeUndefined();
    expect(withNewAmount([payout], { kind: 'amount', amount: '20', currency: 'NGN' })).toBeUndefined();
  });

  it('takes a figure only when its double holds it exactly, trailing zeros aside', () => {
    expect(withNewAmount([payout], { kind: 'amount', amount: '2000.50', currency: undefined })).toEqual([
      { tool: 'create_payout', input: { amount: 2000.5, to_address: ADDRESS } },
    ]);
    expect(
      withNewAmount([payout], { kind: 'amount', amount: '100.00000000000000001', currency: undefined }),
    ).toBeUndefined();
  });
});

describe('conversationInstruction', () => {
  it('reads the turns together when they make one instruction, else a whole instruction answered alone', () => {
    const asked = { role: 'agent' as const, text: 'How much?' };
    expect(
      conversationInstruction(
        [
          { role: 'merchant', text: 'send the usual amount to our supplier' },
          asked,
          { role: 'merchant', text: `pay out 4 USDC to ${ADDRESS}` },
        ],
        NOW,
      ),
    ).toBe(`pay out 4 USDC to ${ADDRESS}`);
    // The instruction written again replaces the figure asked about, even where the turns together
    // read as a correction of it.
    expect(
      conversationInstruction(
        [
          { role: 'merchant', text: `pay 2.000 USDC to ${ADDRESS}` },
          { role: 'agent', text: 'Which do you mean?' },
          { role: 'merchant', text: `sorry, pay 2 USDC to ${ADDRESS}` },
        ],
        NOW,
      ),
    ).toBe(`sorry, pay 2 USDC to ${ADDRESS}`);
    // A partial answer keeps the first message, and with it whatever held it.
    const partial = [
      { role: 'merchant' as const, text: `send 5 USDC to ${ADDRESS} but only after delivery` },
      asked,
      { role: 'merchant' as const, text: 'it is urgent' },
    ];
    expect(conversationInstruction(partial, NOW)).toBe(
      `send 5 USDC to ${ADDRESS} but only after delivery\nit is urgent`,
    );
  });
});
