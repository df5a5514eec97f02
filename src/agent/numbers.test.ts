import { describe, expect, it } from 'vitest';
import { readDigits, readNumberPhrase, readNumeral } from './numbers.ts';
import { tokenize } from './planner/tokens.ts';

const NOW = new Date('2026-03-18T10:00:00.000Z');

/** The first amount the lexer reads in `text`, through the number reader. */
function amountOf(text: string): unknown {
  const token = tokenize(text, NOW).find((t) => t.kind === 'amount');
  return token?.kind === 'amount' ? token.number : undefined;
}

const exact = (text: string) => ({ type: 'exact', text });

describe('the number reader', () => {
  it('reads digits with the separators merchants write', () => {
    expect(readDigits('250')).toEqual(exact('250'));
    expect(readDigits('1,200.50')).toEqual(exact('1200.50'));
    expect(readDigits('1.200,50')).toEqual(exact('1200.50'));
    expect(readDigits('1.000.000')).toEqual(exact('1000000'));
    expect(readDigits('12,345,678')).toEqual(exact('12345678'));
  });

  it('asks back a reading that depends on the locale, quoting it', () => {
    expect(readDigits('5.000')).toMatchObject({ type: 'unreadable', reason: expect.stringContaining('"5.000"') });
    expect(readDigits('1.005')).toMatchObject({ type: 'unreadable', reason: expect.stringContaining('1,005') });
    expect(readDigits('12,5')).toMatchObject({ type: 'unreadable', reason: expect.stringContaining('"12,5"') });
    expect(readDigits('1,00')).toMatchObject({ type: 'unreadable' });
    expect(readDigits('1,2345')).toMatchObject({ type: 'unreadable' });
  });

  it('reads k, m and bn suffixes, and asks back a letter inside the digits', () => {
    expect(readNumeral('5k')).toEqual({ kind: 'number', value: exact('5000') });
    expect(readNumeral('1.2k')).toEqual({ kind: 'number', value: exact('1200') });
    expect(readNumeral('2m')).toEqual({ kind: 'number', value: exact('2000000') });
    expect(readNumeral('1.5bn')).toEqual({ kind: 'number', value: exact('1500000000') });
    for (const raw of ['1k5', '5k2', '2m3', '1Ok'])
      expect(readNumeral(raw)).toMatchObject({ kind: 'number', value: { type: 'unreadable' } });
  });

  it('never reads exponent notation, look-alike letters or a multiplier as an amount', () => {
    for (const raw of ['1e3', '2E2', '1.5e3', '25e-2', '5e-1', '1e309', '1O0', '5OO', '4O', '1l0', '2O,000', '2x'])
      expect(readNumeral(raw), raw).toMatchObject({
        kind: 'number',
        value: { type: 'unreadable', reason: expect.stringContaining(`"${raw}"`) },
      });
  });

  it('leaves ordinals, times and units to be what they are', () => {
    expect(readNumeral('3rd')).toEqual({ kind: 'not_an_amount' });
    expect(readNumeral('10am')).toEqual({ kind: 'not_an_amount' });
    expect(readNumeral('50kg')).toEqual({ kind: 'not_an_amount' });
  });

  it('reads words and digits with scale words', () => {
    const phrase = (text: string) => readNumberPhrase(text.split(' '), 0).value;
    expect(phrase('fifty')).toEqual(exact('50'));
    expect(phrase('two hundred')).toEqual(exact('200'));
    expect(phrase('twenty five')).toEqual(exact('25'));
    expect(phrase('one hundred and fifty')).toEqual(exact('150'));
    expect(phrase('a thousand')).toEqual(exact('1000'));
    expect(phrase('two thousand five hundred')).toEqual(exact('2500'));
    expect(phrase('seventy five point five')).toEqual(exact('75.5'));
    const digits = (text: string) => {
      const words = text.split(' ');
      return readNumberPhrase(words, 0, readDigits(words[0]!)).value;
    };
    expect(digits('2 hundred')).toEqual(exact('200'));
    expect(digits('3 hundred and fifty')).toEqual(exact('350'));
    expect(digits('12 thousand 5 hundred')).toEqual(exact('12500'));
    expect(digits('1.5 million')).toEqual(exact('1500000'));
    expect(digits('1.5 thousand')).toEqual(exact('1500'));
    expect(digits('1 thousand 5')).toMatchObject({
      type: 'unreadable',
      reason: expect.stringContaining('1 thousand 5'),
    });
  });

  it('is what the lexer reads amounts with, currency attached', () => {
    expect(amountOf('send 2 hundred usdc')).toEqual(exact('200'));
    expect(amountOf('pay 1e3 USDC')).toMatchObject({ type: 'unreadable' });
    expect(amountOf('refund KSh 1,O00 ya')).toMatchObject({ type: 'unreadable' });
    expect(amountOf('refund GH₵ I50 of it')).toMatchObject({ type: 'unreadable' });
    expect(amountOf('pay l00 USDC')).toMatchObject({ type: 'unreadable' });
    expect(amountOf('send 20 usdc x2')).toEqual(exact('20'));
    const glued = tokenize('send 50usdc now', NOW).find((t) => t.kind === 'amount');
    expect(glued).toMatchObject({ number: exact('50'), currency: { code: 'USDC' } });
    // Found by the number fuzzer (test/agent.numbers.fuzz.test.ts): each once planned an amount.
    expect(amountOf('pay 4e+4 USDC')).toMatchObject({ type: 'unreadable' });
    expect(amountOf('refund 1l naira of it')).toMatchObject({ type: 'unreadable' });
    expect(amountOf('pay 100+ USDC')).toMatchObject({ type: 'unreadable' });
    expect(amountOf('pay 1.k USDC')).toMatchObject({ type: 'unreadable' });
    // A reference is not a look-alike amount: no currency stands beside it.
    expect(tokenize('refund order SO55', NOW).some((t) => t.kind === 'amount')).toBe(false);
  });
});
