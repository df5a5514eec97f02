// Policy amounts are written by people (PUT /v1/policy, the dashboard) as decimal strings in major
// units of the settlement asset, and judged as bigint minor units. Nothing here touches a float: a
// JSON number for a limit is refused by the schema because 0.1 in JSON is already an approximation.

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
