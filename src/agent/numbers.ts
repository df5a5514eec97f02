/**
 * The agent's one reader of the numbers a merchant writes (docs/agent.md "Numbers, currencies and dates", issue 32).
 * The planner's lexer reads every amount through it, and grounding reads the instruction through
 * that lexer, so a figure means the same thing whichever model acts on it.
 *
 * It reads what merchants write: digits with the separators they use ("1,200.50", "1.200,50",
 * "1.000.000"), k/m/bn suffixes ("5k", "1.2k", "2m"), words ("fifty", "two hundred", "seventy
 * five point five") and digits mixed with scale words ("2 hundred", "1.5 million", "12 thousand 5
 * hundred", "3 hundred and fifty"). Anything else that looks numeric is returned `unreadable` with
 * a reason that quotes it, for the agent to ask back: exponent notation ("1e3"), letters among the
 * digits ("1O0", "l00", "1k5"), a multiplier ("2x"), a reading that depends on the writer's locale
 * ("5.000", "12,5"), a digit group whose place is unclear ("1 thousand 5"). Values are decimal
 * text, never floats; the currency's decimals are checked where the amount is used.
 */

export type NumberValue = { type: 'exact'; text: string } | { type: 'unreadable'; reason: string };

export const NUMBER_WORDS: ReadonlyMap<string, bigint> = new Map([
  ['zero', 0n],
  ['one', 1n],
  ['two', 2n],
  ['three', 3n],
  ['four', 4n],
  ['five', 5n],
  ['six', 6n],
  ['seven', 7n],
  ['eight', 8n],
  ['nine', 9n],
  ['ten', 10n],
  ['eleven', 11n],
  ['twelve', 12n],
  ['thirteen', 13n],
  ['fourteen', 14n],
  ['fifteen', 15n],
  ['sixteen', 16n],
  ['seventeen', 17n],
  ['eighteen', 18n],
  ['nineteen', 19n],
  ['twenty', 20n],
  ['thirty', 30n],
  ['forty', 40n],
  ['fourty', 40n],
  ['fifty', 50n],
  ['sixty', 60n],
  ['seventy', 70n],
  ['eighty', 80n],
  ['ninety', 90n],
]);

export const SCALE_WORDS: ReadonlyMap<string, number> = new Map([
  ['hundred', 2],
  ['thousand', 3],
  ['grand', 3],
  ['million', 6],
  ['billion', 9],
]);

/** Suffix letters that scale the digits they follow ("5k", "2m", "1.5bn"), as powers of ten. */
const SUFFIX_SCALE: ReadonlyMap<string, number> = new Map([
  ['k', 3],
  ['m', 6],
  ['mn', 6],
  ['bn', 9],
  ['b', 9],
]);

/**
 * Letters typed for digits: O for 0, l and I for 1, S for 5. Among digits they make a number that
 * reads two ways ("1O0" is 100 to one reader and 1 to another), so it is asked back, never read.
 */
const LOOK_ALIKE = /[OoIlS]/;

/**
 * Letters that may follow digits without making an amount of them: ordinals, times, units. Not a
 * lone "l" (litres): "1l" is as likely a 1 and an l typed for a 1.
 */
const NOT_AN_AMOUNT_TAIL =
  /^(?:st|nd|rd|th|am|pm|hrs?|h|mins?|days?|wks?|kg|g|km|cm|mm|ml|ltrs?|pcs?|yds?|ft|gb|mb|tb|px)$/i;

/** Multiplies decimal text by 10^places without floats: ("1.2", 3) → "1200". */
export function shiftDecimal(text: string, places: number): string {
  const [whole = '0', fraction = ''] = text.split('.');
  const digits = whole + fraction.padEnd(places, '0');
  const point = whole.length + places;
  const intPart = digits.slice(0, point).replace(/^0+(?=\d)/, '');
  const fracPart = digits.slice(point).replace(/0+$/, '');
  return fracPart === '' ? intPart : `${intPart}.${fracPart}`;
}

/** Adds two non-negative decimal texts exactly. */
function addDecimal(a: string, b: string): string {
  const places = Math.max(a.split('.')[1]?.length ?? 0, b.split('.')[1]?.length ?? 0);
  const scaled = (text: string): bigint => BigInt(shiftDecimal(text, places).split('.')[0] ?? '0');
  const sum = (scaled(a) + scaled(b)).toString().padStart(places + 1, '0');
  if (places === 0) return sum;
  return shiftDecimal(`${sum.slice(0, -places)}.${sum.slice(-places)}`, 0);
}

const unreadable = (reason: string): NumberValue => ({ type: 'unreadable', reason });

/**
 * Digits with separators, as written (no suffix, no sign): "1,200.50", "1.200,50", "1.000.000",
 * "250". A single dot before exactly three digits ("5.000") and a comma before one or two
 * ("12,5", "1,00") read differently by locale: they are asked back in every currency.
 */
export function readDigits(raw: string): NumberValue {
  if (/^\d{1,3}\.\d{3}$/.test(raw))
    return unreadable(
      `"${raw}" reads as ${raw.replace('.', ',')} where a dot separates thousands and as ${raw.replace(/\.?0+$/, '')} where it marks decimals: write it without the dot, or with a comma for thousands (${raw.replace('.', ',')})`,
    );
  if (/^\d+(?:\.\d+)?$/.test(raw)) return { type: 'exact', text: raw };
  if (/^\d{1,3}(?:,\d{3})+(?:\.\d+)?$/.test(raw)) return { type: 'exact', text: raw.replace(/,/g, '') };
  // "1.200,50" and "1.000.000": European grouping, unambiguous once there is a comma or two dots.
  if (/^\d{1,3}(?:\.\d{3})+,\d+$/.test(raw) || /^\d{1,3}(?:\.\d{3}){2,}$/.test(raw))
    return { type: 'exact', text: raw.replace(/\./g, '').replace(',', '.') };
  if (/^\d+,\d{1,2}$/.test(raw))
    return unreadable(
      `"${raw}" could be a decimal comma (${raw.replace(',', '.')}) or a typo: write it as ${raw.replace(',', '.')} or in full`,
    );
  return unreadable(`"${raw}" is not a number I can read: write it as 1,000 or 1000.50`);
}

/** What a piece that starts with a digit is: an amount (maybe glued to a word), or an identifier. */
export type Numeral =
  | { kind: 'number'; value: NumberValue; tail?: string }
  /** "3rd", "10am", "50kg": digits that count, order or measure something, not money. */
  | { kind: 'not_an_amount' };

/**
 * A number written in digits, maybe with a scale suffix or a word glued to it ("5k", "1.2k",
 * "50usdc"): the caller decides whether a glued `tail` is a currency. Everything else that mixes
 * letters into digits is unreadable.
 */
export function readNumeral(raw: string): Numeral {
  if (/^\d+(?:[.,]\d+)?e[+-]?\d+$/i.test(raw))
    return {
      kind: 'number',
      value: unreadable(`"${raw}" is exponent notation, which I do not read as an amount: write the amount in digits`),
    };
  const suffixed = /^(?<digits>\d(?:[\d,.]*\d)?)(?<scale>k|mn|m|bn|b)$/i.exec(raw);
  if (suffixed?.groups) {
    const value = readDigits(suffixed.groups.digits ?? '');
    const places = SUFFIX_SCALE.get((suffixed.groups.scale ?? '').toLowerCase()) ?? 0;
    return {
      kind: 'number',
      value: value.type === 'exact' ? { type: 'exact', text: shiftDecimal(value.text, places) } : value,
    };
  }
  if (/^\d(?:[\d,.]*\d)?$/.test(raw)) return { kind: 'number', value: readDigits(raw) };
  const glued = /^(?<digits>\d(?:[\d,.]*\d)?)(?<tail>[a-z]+)$/i.exec(raw);
  if (glued?.groups) {
    const tail = glued.groups.tail ?? '';
    if (NOT_AN_AMOUNT_TAIL.test(tail)) return { kind: 'not_an_amount' };
    if (/^x$/i.test(tail)) return { kind: 'number', value: multiplier(raw) };
    if (!LOOK_ALIKE.test(tail) || tail.length > 2)
      return { kind: 'number', value: readDigits(glued.groups.digits ?? ''), tail };
  }
  if (/^[\dOoIlSkKmM,.]+$/.test(raw) && /\d/.test(raw))
    return {
      kind: 'number',
      value: unreadable(
        `"${raw}" mixes letters with digits (an O for a 0, an l for a 1, a letter inside the number?): write the amount in digits only`,
      ),
    };
  return {
    kind: 'number',
    value: unreadable(`"${raw}" is not a number I can read: write the amount in digits, e.g. 1,000 or 1000.50`),
  };
}

/** "2x", "x2": a count of times, which is no amount: the agent asks what is meant. */
function multiplier(raw: string): NumberValue {
  return unreadable(
    `"${raw}" multiplies: say the exact amount of each payment, and how many separate payments you want`,
  );
}

/**
 * A letter-first look-alike of a number ("l00", "I50", "S00", "O5"): only ever read as one when
 * it stands where an amount would (the caller decides, by a currency written beside it).
 */
export function isLetterLookAlike(raw: string): boolean {
  return /^[OoIlS][\dOoIlS,.]*\d[\dOoIlS,.]*$/.test(raw) || /^[OoIlS]+\d+$/.test(raw);
}

export function lookAlike(raw: string): NumberValue {
  return unreadable(
    `"${raw}" mixes letters with digits (an O for a 0, an l or I for a 1, an S for a 5?): write the amount in digits only`,
  );
}

/**
 * Reads on from a number at `words[start]` (digits already read as `first`, or a number word)
 * through the scale words and groups after it: "2 hundred", "1.5 million", "12 thousand 5
 * hundred", "3 hundred and fifty", "two hundred", "one hundred and fifty", "twenty five",
 * "seventy five point five", "a thousand". `words` are the lower-cased pieces of the message.
 * Returns the value and the index after the phrase.
 */
export function readNumberPhrase(
  words: readonly string[],
  start: number,
  first?: NumberValue,
): { value: NumberValue; next: number } {
  let total = '0';
  /** The group being read, before a scale word multiplies it. */
  let current: string | undefined;
  /** The group was multiplied by "hundred": it may take one part below a hundred ("and fifty"). */
  let hundreds = false;
  let started = false;
  let i = start;
  if (first !== undefined) {
    if (first.type !== 'exact') return { value: first, next: start + 1 };
    current = first.text;
    started = true;
    i = start + 1;
  }
  for (; i < words.length; i++) {
    const word = words[i]!;
    const scale = SCALE_WORDS.get(word);
    if (scale !== undefined) {
      if (current === undefined || (hundreds && scale === 2)) break;
      if (scale === 2) {
        // "hundred" multiplies the group before it: "3 hundred", "twelve hundred".
        current = shiftDecimal(current, 2);
        hundreds = true;
      } else {
        total = addDecimal(total, shiftDecimal(current, scale));
        current = undefined;
        hundreds = false;
      }
      continue;
    }
    if (!started && (word === 'a' || word === 'an') && SCALE_WORDS.has(words[i + 1] ?? '')) {
      current = '1';
      started = true;
      continue;
    }
    const joined = started && (word === 'and' || word === '-');
    const at = joined ? i + 1 : i;
    const group = numberWordsAt(words, at) ?? digitsAt(words, at);
    if (group === undefined) break;
    if (!started) {
      current = group.value;
      started = true;
      i = group.next - 1;
      continue;
    }
    if (current !== undefined) {
      // "three hundred and fifty" reads on; "sixty forty", "5 five" and "200 50" are two numbers.
      const belowHundred = !group.value.includes('.') && BigInt(group.value) < 100n;
      if (!hundreds || !belowHundred || !(group.fromWords || joined)) break;
      current = addDecimal(current, group.value);
      hundreds = false;
      i = group.next - 1;
      continue;
    }
    // "1 thousand 5": 1,005 or 1,500? Digits right after a scale need "and", or a scale of their own.
    if (!group.fromWords && !joined && !SCALE_WORDS.has(words[group.next] ?? ''))
      return {
        value: unreadable(
          `"${words.slice(start, group.next).join(' ')}" could be read more than one way: write the amount in digits`,
        ),
        next: group.next,
      };
    current = group.value;
    i = group.next - 1;
  }
  let text = addDecimal(total, current ?? '0');
  // "seventy five point five": digits after "point", one word each.
  if (total === '0' && !hundreds && words[i] === 'point') {
    let digits = '';
    let j = i + 1;
    for (; j < words.length; j++) {
      const value = NUMBER_WORDS.get(words[j]!);
      const digit = /^\d$/.test(words[j]!)
        ? words[j]!
        : value !== undefined && value < 10n
          ? value.toString()
          : undefined;
      if (digit === undefined) break;
      digits += digit;
    }
    if (digits !== '') {
      text = `${text}.${digits}`;
      i = j;
    }
  }
  return { value: { type: 'exact', text }, next: i };
}

/** A run of number words from `i` ("twenty five", "fifty"): below one hundred, no scale. */
function numberWordsAt(
  words: readonly string[],
  i: number,
): { value: string; next: number; fromWords: true } | undefined {
  const value = NUMBER_WORDS.get(words[i] ?? '');
  if (value === undefined) return undefined;
  let sum = value;
  let j = i + 1;
  const unit = NUMBER_WORDS.get(words[j] === '-' ? (words[j + 1] ?? '') : (words[j] ?? ''));
  if (value >= 20n && value % 10n === 0n && unit !== undefined && unit < 10n && unit > 0n) {
    sum += unit;
    j += words[j] === '-' ? 2 : 1;
  }
  return { value: sum.toString(), next: j, fromWords: true };
}

function digitsAt(words: readonly string[], i: number): { value: string; next: number; fromWords: false } | undefined {
  const word = words[i];
  if (word === undefined || !/^\d+(?:\.\d+)?$/.test(word)) return undefined;
  return { value: word, next: i + 1, fromWords: false };
}
