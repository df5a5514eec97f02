// The English locale alone: the package's main entry loads all of its 14 locales (268 modules,
// about 90 ms of every start), and only English is read.
import * as chronoEn from 'chrono-node/en';
import { NUMBER_WORDS } from '../numbers.ts';
import type { DateRange } from './token-types.ts';

/**
 * The offline planner's date reader: the phrases of a message that name a past day or period
 * ("yesterday", "last week", "since the 3rd"), read with chrono's English locale and turned into a
 * date range that ends no later than now (the future has no revenue yet). The lexer makes a date
 * token of each.
 */

interface DatePhrase {
  text: string;
  at: number;
  range: DateRange | undefined;
  past: boolean;
}

const DAY_MS = 86_400_000;

function startOfDay(date: Date): Date {
  return new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()));
}

function min(a: Date, b: Date): Date {
  return a.getTime() <= b.getTime() ? a : b;
}

/**
 * Date phrases found by chrono-node, each with the UTC range it names: a day ("yesterday", "on
 * Monday", "March 3"), a calendar week or month ("last week", "this month"), or a rolling span
 * ("the last 7 days"). Ranges never reach past now. A bare month name ("March rent") is not a
 * date: it is a word of a memo.
 */
export function datePhrases(message: string, now: Date): DatePhrase[] {
  const found = chronoEn.parse(message, { instant: now, timezone: 0 }, { forwardDate: false });
  const phrases: DatePhrase[] = [];
  for (const result of found) {
    const lead = result.text.replace(/^(?:on|at|in|for)\s+/i, '');
    const at = result.index + (result.text.length - lead.length);
    const text = lead.replace(/[\s,.;:!?]+$/, '');
    const lower = text.toLowerCase();
    const known = result.start;
    // A month name alone, a time of day alone, or a bare number is not a date phrase here.
    if (/^(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?$/i.test(text)) continue;
    if (/^\d+$/.test(text)) continue;
    // "3/4" and "70/30" are shares, not days of the year; "on 12/03" is a day, but which one (the
    // 12th of March or the 3rd of December) depends on a locale: a day gone by, never a period.
    if (/^\d{1,2}\/\d{1,2}$/.test(text)) {
      if (/\b(?:on|dated)\s+$/i.test(message.slice(0, result.index)))
        phrases.push({ text, at, range: undefined, past: true });
      continue;
    }
    // "6 hours of work", "3 days of cleaning": a quantity of work, not a time.
    if (
      /^(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten)\s+(?:hours?|days?|nights?|weeks?|months?|years?)$/i.test(
        text,
      ) &&
      /^\s+of\b/i.test(message.slice(at + text.length))
    )
      continue;
    // "a busy weekend" tells a story; "this weekend" would be a date.
    if (/^weekend$/i.test(text)) continue;
    // "Morning!" is a greeting, not a date.
    if (
      /^(?:morning|afternoon|evening|noon|night|tonight)$/i.test(text) &&
      !/this|tomorrow|yesterday/i.test(result.text)
    )
      continue;
    if (
      !known.isCertain('day') &&
      !known.isCertain('weekday') &&
      !known.isCertain('month') &&
      !/week|month|year|day/i.test(lower)
    ) {
      phrases.push({ text, at, range: undefined, past: false });
      continue;
    }
    // "from March 1 to March 5": both days, whole.
    const range =
      result.end !== null && result.end !== undefined
        ? spanOf(result.start.date(), result.end.date(), now)
        : rangeOf(lower, result.start.date(), now);
    phrases.push({ text, at, range, past: range !== undefined && range.to.getTime() <= startOfDay(now).getTime() });
  }
  return phrases;
}

function spanOf(start: Date, end: Date, now: Date): DateRange | undefined {
  const from = startOfDay(start);
  const to = min(new Date(startOfDay(end).getTime() + DAY_MS), now);
  return from.getTime() < to.getTime() ? { from, to } : undefined;
}

function rangeOf(lower: string, start: Date, now: Date): DateRange | undefined {
  const today = startOfDay(now);
  const rolling = /(?:last|past|previous)\s+(\d+|\w+)\s+days?/.exec(lower);
  if (rolling) {
    const n = /^\d+$/.test(rolling[1]!) ? Number(rolling[1]) : Number(NUMBER_WORDS.get(rolling[1]!) ?? Number.NaN);
    if (!Number.isInteger(n) || n < 1 || n > 366) return undefined;
    return { from: new Date(now.getTime() - n * DAY_MS), to: now };
  }
  if (/\bweek\b/.test(lower)) {
    const weekday = (today.getUTCDay() + 6) % 7; // Monday = 0
    const thisMonday = new Date(today.getTime() - weekday * DAY_MS);
    if (/\b(?:this|current)\b/.test(lower)) return { from: thisMonday, to: now };
    if (/\b(?:last|previous|past)\b/.test(lower))
      return { from: new Date(thisMonday.getTime() - 7 * DAY_MS), to: thisMonday };
    return undefined;
  }
  if (/\bmonth\b/.test(lower)) {
    const thisMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    if (/\b(?:this|current)\b/.test(lower)) return { from: thisMonth, to: now };
    if (/\b(?:last|previous|past)\b/.test(lower))
      return { from: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)), to: thisMonth };
    return undefined;
  }
  if (/\byear\b/.test(lower)) {
    const thisYear = new Date(Date.UTC(now.getUTCFullYear(), 0, 1));
    if (/\b(?:this|current)\b/.test(lower)) return { from: thisYear, to: now };
    return undefined;
  }
  const day = startOfDay(start);
  if (day.getTime() > today.getTime()) return undefined; // the future has no revenue yet
  return { from: day, to: min(new Date(day.getTime() + DAY_MS), now) };
}
