// Policy amounts are stored as decimal strings in major units of the settlement asset, and judged
// as bigint minor units. The API takes and shows them as JSON numbers read from their digits
// (limitAmount below), as it does every amount; nothing here does arithmetic on a float.

import { z } from 'zod';
import { JsonNumber } from '../core/json-text.ts';
import { pow10, SETTLEMENT_CURRENCY } from '../domain/money.ts';

const EXPONENT = SETTLEMENT_CURRENCY.exponent;

/** Largest number of integer digits a policy amount may have: 10^15 USDC is far above any real limit. */
const MAX_INTEGER_DIGITS = 15;

/**
 * A policy amount: "0", "1000", "1000.50", at most as many fraction digits as the settlement asset
 * has (6 for USDC). No sign, no exponent, no leading zeros, no grouping commas, no spaces: a limit
 * is safety configuration, so anything ambiguous is refused rather than guessed at.
 */
export const POLICY_AMOUNT_PATTERN: RegExp = new RegExp(
  `^(0|[1-9]\\d{0,${MAX_INTEGER_DIGITS - 1}})(?:\\.(\\d{1,${EXPONENT}}))?$`,
);

export const POLICY_AMOUNT_RULE = `must be a decimal string of ${SETTLEMENT_CURRENCY.code} in major units, e.g. "1000" or "1000.50", with at most ${EXPONENT} decimal places`;

/** "1000.50" → 1000500000n (USDC minor units). Throws on text the schema would have refused. */
export function policyAmountToMinor(text: string): bigint {
  const match = POLICY_AMOUNT_PATTERN.exec(text);
  if (match === null) throw new RangeError(`not a policy amount: ${JSON.stringify(text)} ${POLICY_AMOUNT_RULE}`);
  const [, integer = '0', fraction = ''] = match;
  return BigInt(integer) * pow10(EXPONENT) + BigInt(fraction.padEnd(EXPONENT, '0'));
}

/** The same threshold when set, or undefined when the policy leaves it off (null). */
export function optionalPolicyAmountToMinor(text: string | null): bigint | undefined {
  return text === null ? undefined : policyAmountToMinor(text);
}

/**
 * Settlement minor units as short human text for reasons: 5000000000n → "5,000 USDC",
 * 1000500000n → "1,000.5 USDC", 3164557n → "3.164557 USDC". Trailing zeros are dropped because a
 * reason is read by a person deciding whether to approve, where "5,000.000000 USDC" is noise.
 */
export function formatSettlementAmount(minor: bigint): string {
  const negative = minor < 0n;
  const magnitude = negative ? -minor : minor;
  const unit = pow10(EXPONENT);
  const integer = (magnitude / unit).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const fraction = (magnitude % unit).toString().padStart(EXPONENT, '0').replace(/0+$/, '');
  const number = fraction === '' ? integer : `${integer}.${fraction}`;
  return `${negative ? '-' : ''}${number} ${SETTLEMENT_CURRENCY.code}`;
}

/**
 * A limit (a policy amount, a settlement threshold) as the API takes it: a JSON number in major
 * units of the settlement asset, the one way the API writes money (docs/api.md, "Amounts"), read
 * from the digits written, never through a double; or, for one more release, the decimal string
 * the API used to take. Either way it becomes the canonical decimal string the policy stores.
 *
 * A number arrives as a plain number only when String() of its double is the text written, and
 * as a JsonNumber otherwise (core/json-text.ts): an exponent, or digits a double cannot hold, is
 * refused, so what passes is exactly what was written. A limit must also read back as the same
 * JSON number (at most 15 significant digits), so a GET shows exactly the limit that is enforced.
 */
export function limitAmount(description: string) {
  return z
    .preprocess(
      (value, ctx) => {
        // A missing field is said to be missing (core/validation.ts), not to be of the wrong type.
        if (value === undefined) {
          ctx.addIssue({ code: 'invalid_type', expected: 'number', input: undefined, message: LIMIT_AMOUNT_RULE });
          return z.NEVER;
        }
        const written = value instanceof JsonNumber ? value : undefined;
        if (written?.hasExponent) {
          ctx.addIssue({ code: 'custom', message: `${LIMIT_AMOUNT_RULE} (plain digits, without an exponent)` });
          return z.NEVER;
        }
        if (written && !written.exact) {
          ctx.addIssue({ code: 'custom', message: LIMIT_AMOUNT_RULE });
          return z.NEVER;
        }
        return typeof (written?.value ?? value) === 'number' ? String(written?.value ?? value) : value;
      },
      z
        .union(
          [
            z.number({ error: LIMIT_AMOUNT_RULE }).min(0, LIMIT_AMOUNT_RULE),
            z.string({ error: LIMIT_AMOUNT_RULE }).describe('Deprecated: the same amount as a decimal string.'),
          ],
          { error: LIMIT_AMOUNT_RULE },
        )
        .transform(String)
        .pipe(
          z
            .string()
            .regex(POLICY_AMOUNT_PATTERN, LIMIT_AMOUNT_RULE)
            .refine(readsBackExactly, `${LIMIT_AMOUNT_RULE}, and at most 15 significant digits`),
        )
        .nullable(),
    )
    .describe(description);
}

export const LIMIT_AMOUNT_RULE = `must be a number of ${SETTLEMENT_CURRENCY.code} in major units, e.g. 1000 or 1000.5, not negative, with at most ${EXPONENT} decimal places`;

/** Whether a limit's text, as a JSON number, is the same amount (a double holds it exactly). */
function readsBackExactly(text: string): boolean {
  if (!POLICY_AMOUNT_PATTERN.test(text)) return true; // the pattern's own check says what is wrong
  const back = String(Number(text));
  return POLICY_AMOUNT_PATTERN.test(back) && policyAmountToMinor(back) === policyAmountToMinor(text);
}

/** A stored limit ("1000.50") as the API shows it: a JSON number in major units (1000.5). */
export function limitAmountNumber(text: string | null): number | null {
  return text === null ? null : Number(text);
}
