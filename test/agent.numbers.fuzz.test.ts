import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkGrounding, evidenceFromInstruction } from '../src/agent/grounding.ts';
import { createOfflinePlanner } from '../src/agent/models/offline-planner.ts';
import { getCurrency, parseMajorAmount } from '../src/domain/money.ts';
import { bindPlaceholders, type EvalCase, MONEY_TOOLS, runCaseOffline } from '../evals/planner-harness.ts';
import { testAccount, testApp, testRuntime, type TestAccount } from './support/harness.ts';
import { fund, post } from './support/money.ts';

/**
 * The number fuzzer (issue 32, "What to build" 6): random notations of amounts, look-alike letters,
 * separators and precisions, written into instructions the way merchants write them. However the
 * text is written, no run may plan or run an amount the text does not contain: a notation with one
 * reading is planned with exactly that amount; any other (an exponent, a letter among the digits,
 * a locale-dependent separator, more decimals than the currency has, a multiplier) moves nothing,
 * and grounding (the check every model's money calls pass) refuses each of its naive readings.
 *
 * Reproduce a failure with the seed fast-check prints: FUZZ_SEED=<seed> npx vitest run test/agent.numbers.
 */

const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;
const NOW = new Date('2026-03-18T10:00:00.000Z');
const A = '0x0a995e60b5f9c71400429048598fb0cfb88c2a9a';
const B = '0x326dc27841e8335ddade853693cb824959dc9733';

/** A written amount: its text, and the one value it means, or none when it must be asked back. */
interface Notation {
  text: string;
  /** Decimal text of the only reading; undefined when the agent must ask. */
  value: string | undefined;
  /** Values a careless reader might take it for: grounding must refuse each of them. */
  naive: string[];
  kind: string;
}

/**
 * An independent reference for random strings: the plain forms with one reading (digits, comma
 * groups, European groups, a k suffix on any of them), anything else none.
 */
function referenceValue(text: string): string | undefined {
  const suffix = /^(.*\d)k$/i.exec(text);
  if (suffix) {
    const base = referenceValue(suffix[1]!);
    if (base === undefined) return undefined;
    const [whole = '', fraction = ''] = base.split('.');
    const digits = `${whole}${fraction.padEnd(3, '0')}`;
    const shifted = `${digits.slice(0, whole.length + 3)}.${digits.slice(whole.length + 3)}`;
    return shifted.replace(/^0+(?=\d)/, '').replace(/\.?0*$/, '');
  }
  let plain: string | undefined;
  if (/^\d+(?:\.\d+)?$/.test(text) && !/^\d{1,3}\.\d{3}$/.test(text)) plain = text;
  else if (/^\d{1,3}(?:,\d{3})+(?:\.\d+)?$/.test(text)) plain = text.replace(/,/g, '');
  else if (/^\d{1,3}(?:\.\d{3})+,\d+$/.test(text) || /^\d{1,3}(?:\.\d{3}){2,}$/.test(text))
    plain = text.replace(/\./g, '').replace(',', '.');
  if (plain === undefined) return undefined;
  const [whole = '', fraction = ''] = plain.split('.');
  const trimmed = fraction.replace(/0+$/, '');
  return trimmed === '' ? whole.replace(/^0+(?=\d)/, '') : `${whole.replace(/^0+(?=\d)/, '')}.${trimmed}`;
}

const ONES = ['', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
const TEENS = [
  'ten',
  'eleven',
  'twelve',
  'thirteen',
  'fourteen',
  'fifteen',
  'sixteen',
  'seventeen',
  'eighteen',
  'nineteen',
];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];

/** 1..999 in words, the test's own reference ("two hundred and fifty"). */
function inWords(n: number): string {
  const hundreds = Math.floor(n / 100);
  const rest = n % 100;
  const below =
    rest < 10
      ? ONES[rest]!
      : rest < 20
        ? TEENS[rest - 10]!
        : `${TENS[Math.floor(rest / 10)]!} ${ONES[rest % 10]!}`.trim();
  if (hundreds === 0) return below;
  return rest === 0 ? `${ONES[hundreds]!} hundred` : `${ONES[hundreds]!} hundred and ${below}`;
}

const grouped = (whole: string): string => whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** Amounts with one reading, in every notation the reader promises to read exactly. */
const exactNotation: fc.Arbitrary<Notation> = fc.oneof(
  fc
    .tuple(fc.integer({ min: 1, max: 999_999 }), fc.stringMatching(/^\d{0,6}$/))
    // "1.000" (three decimals, no comma) is the locale case below, asked back.
    .filter(([whole, fraction]) => whole >= 1000 || fraction.length !== 3)
    .map(([whole, fraction]) => {
      const value = fraction.replace(/0+$/, '') === '' ? String(whole) : `${whole}.${fraction.replace(/0+$/, '')}`;
      const decimals = fraction === '' ? '' : `.${fraction}`;
      return { text: `${grouped(String(whole))}${decimals}`, value, naive: [], kind: 'digits' };
    }),
  fc.tuple(fc.integer({ min: 1_000, max: 999_999 }), fc.stringMatching(/^\d{1,2}$/)).map(([whole, fraction]) => ({
    // European grouping with a decimal comma: "12.345,50".
    text: `${grouped(String(whole)).replace(/,/g, '.')},${fraction}`,
    value: fraction.replace(/0+$/, '') === '' ? String(whole) : `${whole}.${fraction.replace(/0+$/, '')}`,
    naive: [],
    kind: 'european',
  })),
  fc.tuple(fc.integer({ min: 1, max: 999 }), fc.constantFrom('', '.5', '.25')).map(([n, fraction]) => {
    const thousands = BigInt(n) * 1000n + (fraction === '.5' ? 500n : fraction === '.25' ? 250n : 0n);
    return { text: `${n}${fraction}k`, value: thousands.toString(), naive: [String(n)], kind: 'k' };
  }),
  fc.integer({ min: 1, max: 999 }).map((n) => ({ text: inWords(n), value: String(n), naive: [], kind: 'words' })),
  fc.tuple(fc.integer({ min: 1, max: 99 }), fc.constantFrom('hundred', 'thousand')).map(([n, scale]) => ({
    text: `${n} ${scale}`,
    value: String(n * (scale === 'hundred' ? 100 : 1000)),
    naive: [String(n)],
    kind: 'digits and scale',
  })),
);

/** Digits a look-alike letter can stand for, and the letters typed for them. */
const LOOK_ALIKES: Record<string, string[]> = { '0': ['O', 'o'], '1': ['l', 'I'], '5': ['S'] };

/** Amounts that must be asked back, each with the readings a careless reader would take. */
const askedNotation: fc.Arbitrary<Notation> = fc.oneof(
  fc
    .tuple(
      fc.integer({ min: 1, max: 99 }),
      fc.constantFrom('e', 'E'),
      fc.constantFrom('', '-', '+'),
      fc.integer({ min: 1, max: 9 }),
    )
    .map(([mantissa, e, sign, exponent]) => {
      const value = sign === '-' ? `${mantissa / 10 ** exponent}` : String(BigInt(mantissa) * 10n ** BigInt(exponent));
      return {
        text: `${mantissa}${e}${sign}${exponent}`,
        value: undefined,
        naive: [String(mantissa), `${mantissa}${exponent}`, value],
        kind: 'exponent',
      };
    }),
  fc
    .tuple(fc.integer({ min: 10, max: 99_999 }), fc.nat())
    .filter(([n]) => /[015]/.test(String(n)))
    .map(([n, pick]) => {
      const digits = String(n);
      const places = [...digits].flatMap((d, i) => (LOOK_ALIKES[d] ? [i] : []));
      const at = places[pick % places.length]!;
      const letters = LOOK_ALIKES[digits[at]!]!;
      const text = `${digits.slice(0, at)}${letters[pick % letters.length]!}${digits.slice(at + 1)}`;
      // A reader that stops at the letter takes the digits before it; one that guesses takes n.
      const before = digits.slice(0, at);
      return { text, value: undefined, naive: [digits, ...(before === '' ? [] : [before])], kind: 'look-alike' };
    }),
  fc
    .tuple(fc.integer({ min: 1, max: 99 }), fc.constantFrom('k', 'm'), fc.integer({ min: 1, max: 9 }))
    .map(([n, suffix, tail]) => ({
      text: `${n}${suffix}${tail}`,
      value: undefined,
      naive: [String(n), `${n}${suffix === 'k' ? '000' : '000000'}`, `${n}.${tail}`],
      kind: 'suffix inside',
    })),
  fc.tuple(fc.integer({ min: 1, max: 999 }), fc.integer({ min: 0, max: 999 })).map(([whole, three]) => {
    const fraction = String(three).padStart(3, '0');
    return {
      text: `${whole}.${fraction}`,
      value: undefined,
      naive: [`${whole}${fraction}`.replace(/^0+/, '')],
      kind: 'locale',
    };
  }),
  fc.tuple(fc.integer({ min: 1, max: 999 }), fc.integer({ min: 1, max: 99 })).map(([whole, fraction]) => ({
    text: `${whole},${fraction}`,
    value: undefined,
    naive: [`${whole}${fraction}`, `${whole}.${fraction}`],
    kind: 'decimal comma',
  })),
  fc.tuple(fc.integer({ min: 1, max: 999 }), fc.stringMatching(/^\d{6}[1-9]$/)).map(([whole, fraction]) => ({
    text: `${whole}.${fraction}`,
    value: undefined,
    naive: [`${whole}.${fraction.slice(0, 6)}`, `${whole}.${fraction.slice(0, 5)}${Number(fraction[5]) + 1}`],
    kind: 'excess precision',
  })),
  fc
    .tuple(
      fc.integer({ min: 1, max: 999 }),
      fc.constantFrom('{} x2', '{}x2', '2x {}', '{} twice', 'twice {}', '{} thrice'),
    )
    .map(([n, form]) => ({
      text: form.replace('{}', String(n)),
      value: undefined,
      naive: [String(n), String(n * 2)],
      kind: 'multiplier',
    })),
  // Letters glued to a grouped figure ("X1,005"): a reader that cuts it at the comma pays the tail.
  fc
    .tuple(
      fc.constantFrom('X', 'AB', 'Q', 'ORD', 'T'),
      fc.integer({ min: 1, max: 999 }),
      fc.integer({ min: 1, max: 999 }),
    )
    .map(([letters, whole, three]) => ({
      text: `${letters}${whole},${String(three).padStart(3, '0')}`,
      value: undefined,
      naive: [String(three), String(whole), `${whole}${String(three).padStart(3, '0')}`],
      kind: 'glued letters',
    })),
  // Letters glued to an exponent ("N1e4", "AB2e3"): neither a reference nor its mantissa.
  fc
    .tuple(fc.constantFrom('N', 'n', 'X', 'AB'), fc.integer({ min: 1, max: 99 }), fc.integer({ min: 1, max: 6 }))
    .map(([letters, mantissa, exponent]) => ({
      text: `${letters}${mantissa}e${exponent}`,
      value: undefined,
      naive: [String(mantissa), String(mantissa * 10 ** exponent)],
      kind: 'glued letters',
    })),
);

/**
 * Random numerals: digits, with look-alike letters, separators and exponents between them, maybe a
 * k or x at the end. (Punctuation around a number, "1,," or "1.", belongs to the sentence.)
 */
const randomNotation: fc.Arbitrary<Notation> = fc
  .tuple(
    fc.constantFrom(...'123456789'),
    fc.array(
      fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom(...'0123456789') },
        { weight: 2, arbitrary: fc.constantFrom(...'OolIS') },
        {
          weight: 3,
          arbitrary: fc.tuple(fc.constantFrom(',', '.'), fc.constantFrom(...'0123456789O')).map((p) => p.join('')),
        },
        {
          weight: 1,
          arbitrary: fc
            .tuple(fc.constantFrom('e', 'E', 'e-', 'e+'), fc.constantFrom(...'123456789'))
            .map((p) => p.join('')),
        },
      ),
      { maxLength: 7 },
    ),
    fc.constantFrom('', '', '', 'k', 'K', 'x'),
  )
  .map(([first, rest, end]) => {
    const text = `${first}${rest.join('')}${end}`;
    return { text, value: referenceValue(text), naive: [], kind: 'random' };
  });

const CURRENCY = fc.constantFrom('USDC', 'usdc', 'dollars', 'bucks', 'USD');

/** Payout instructions as merchants write them, around one amount. */
const PAYOUT_FORMS: readonly ((amount: string, currency: string) => string)[] = [
  (amount, currency) => `pay ${amount} ${currency} to ${A}`,
  (amount, currency) => `pls send ${A} ${amount} ${currency} asap`,
  (amount, currency) => `payout ${amount} ${currency} -> ${A} for invoice 42`,
  (amount, currency) => `Hi team,\n\nKindly transfer ${amount} ${currency} to ${A} for the yarn.\n\nThanks, Ama`,
  (amount, currency) => `abeg send ${amount} ${currency} give ${A}`,
  (amount, currency) => `tafadhali tuma ${amount} ${currency} kwa ${A}`,
];

const instruction = fc.tuple(
  fc.oneof(
    { weight: 2, arbitrary: exactNotation },
    { weight: 3, arbitrary: askedNotation },
    { weight: 2, arbitrary: randomNotation },
  ),
  CURRENCY,
  fc.integer({ min: 0, max: PAYOUT_FORMS.length + 1 }),
);

/** The amount of a money call, as minor units of USDC (or of the refund's currency). */
function minor(amount: unknown, code = 'USDC'): bigint | undefined {
  const parsed = typeof amount === 'number' ? parseMajorAmount(amount, getCurrency(code)!) : undefined;
  return parsed?.ok ? parsed.minor : undefined;
}

function minorOfText(value: string, code = 'USDC'): bigint | undefined {
  const parsed = parseMajorAmount(value, getCurrency(code)!);
  return parsed.ok ? parsed.minor : undefined;
}

const SPLIT_FORM = PAYOUT_FORMS.length;
const REFUND_FORM = PAYOUT_FORMS.length + 1;

/** The instruction for a fuzzed notation: a payout form, an equal split, or a naira refund. */
function textOf(notation: Notation, currency: string, form: number): string {
  if (form === SPLIT_FORM) return `split ${notation.text} ${currency} equally between ${A} and ${B}`;
  if (form === REFUND_FORM) return `refund ${notation.text} naira of $payment:p1, customer returned the shoes`;
  return PAYOUT_FORMS[form]!(notation.text, currency);
}

/** The one reading in the form's currency, or undefined when there is none or the currency cannot hold it. */
const intended = (notation: Notation, form: number): bigint | undefined =>
  notation.value === undefined ? undefined : minorOfText(notation.value, form === REFUND_FORM ? 'NGN' : 'USDC');

describe('the number fuzzer', () => {
  it('the planner never plans an amount the text does not contain, and grounding refuses every other reading', async () => {
    const planner = createOfflinePlanner();
    const kinds = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(instruction, async ([notation, currency, form]) => {
        kinds.set(notation.kind, (kinds.get(notation.kind) ?? 0) + 1);
        const text = textOf(notation, currency, form);
        const testCase: EvalCase = {
          id: 'fuzz-number',
          category: 'payouts',
          intent: 'fuzz',
          instruction: text,
          fixtures: { payments: [{ alias: 'p1', amount: 1_000_000_000, currency: 'NGN', status: 'settled' }] },
          expect: { status: 'completed', calls: [], moves_money: true },
        };
        const run = await runCaseOffline(planner, testCase);
        const money = run.calls.filter((call) => MONEY_TOOLS.has(call.tool));
        const code = form === REFUND_FORM ? 'NGN' : 'USDC';
        const wanted = intended(notation, form);
        if (wanted === undefined) {
          expect(money, `${text} moved money`).toEqual([]);
        } else if (notation.kind === 'random') {
          // A random string with one reading may still be asked back ("0012"), never misread.
          for (const call of money) expect(minor((call.input as { amount?: unknown }).amount, code), text).toBe(wanted);
        } else {
          // Every notation with one reading, in every form, is understood, and exactly.
          expect(money.length, `${text}: ${run.reply}`).toBe(1);
          for (const call of money) expect(minor((call.input as { amount?: unknown }).amount, code), text).toBe(wanted);
        }
        // Grounding, which every model's money calls pass, takes the same reading.
        const evidence = evidenceFromInstruction(bindPlaceholders(text, run.paymentIds), NOW);
        const paymentId = run.paymentIds.get('p1');
        const grounds = (value: string): boolean => {
          const amount = Number(value);
          try {
            if (form === REFUND_FORM) checkGrounding('refund_payment', { payment_id: paymentId, amount }, evidence);
            else checkGrounding('create_payout', { amount, to_address: A }, evidence);
            return true;
          } catch {
            return false;
          }
        };
        // (A multiplier's figure is written, "20 usdc x2": what holds it is the instruction's "x2".)
        for (const reading of notation.naive)
          if (
            reading !== notation.value &&
            minorOfText(reading, code) !== wanted &&
            minorOfText(reading, code) !== undefined
          )
            expect(grounds(reading), `${text}: "${reading}" grounded`).toBe(false);
        if (wanted !== undefined && form !== SPLIT_FORM)
          expect(grounds(notation.value!), `${text}: its own value did not ground`).toBe(true);
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 1500), ...(seed !== undefined ? { seed } : {}) },
    );
    // The generator reached every kind of notation.
    expect([...kinds.keys()].sort()).toEqual(
      [
        'decimal comma',
        'digits',
        'digits and scale',
        'european',
        'exponent',
        'glued letters',
        'excess precision',
        'k',
        'locale',
        'look-alike',
        'multiplier',
        'random',
        'suffix inside',
        'words',
      ].sort(),
    );
  });
});

describe('the number fuzzer on POST /agent/settle', () => {
  let app: FastifyInstance;
  let merchant: TestAccount;

  beforeAll(async () => {
    const runtime = await testRuntime();
    app = await testApp(runtime);
    merchant = await testAccount(runtime);
    await fund(app, merchant.apiKey, 1_000);
  });

  it('no run, planned in a dry run through the real runtime and grounding, carries an amount the text does not contain', async () => {
    await fc.assert(
      fc.asyncProperty(
        instruction.filter(([, , form]) => form !== REFUND_FORM),
        async ([notation, currency, form]) => {
          const text = textOf(notation, currency, form);
          const res = await post(app, merchant.apiKey, '/agent/settle', { instruction: text, dry_run: true });
          expect(res.statusCode, res.body).toBe(200);
          const run = res.json() as { status: string; actions: { tool: string; input: { amount?: unknown } }[] };
          const money = run.actions.filter((action) => MONEY_TOOLS.has(action.tool));
          const wanted = intended(notation, form);
          if (wanted === undefined) expect(money, text).toEqual([]);
          for (const action of money) expect(minor(action.input.amount), text).toBe(wanted);
        },
      ),
      { numRuns: 60, ...(seed !== undefined ? { seed } : {}) },
    );
  });
});
