import { describe, expect, it } from 'vitest';
import { ID_PREFIXES, ID_RANDOM_LENGTH, idPattern, isId, newId } from './ids.ts';

describe('newId', () => {
  it('is the prefix, an underscore and 22 base62 characters for every prefix', () => {
    for (const prefix of ID_PREFIXES) {
      const id = newId(prefix);
      expect(id).toMatch(new RegExp(`^${prefix}_[0-9A-Za-z]{22}$`));
      expect(isId(prefix, id)).toBe(true);
      expect(idPattern(prefix).test(id)).toBe(true);
    }
  });

  it('carries at least 128 bits', () => {
    expect(ID_RANDOM_LENGTH * Math.log2(62)).toBeGreaterThanOrEqual(128);
  });

  it('does not repeat and uses the whole alphabet evenly', () => {
    const ids = Array.from({ length: 5000 }, () => newId('pay'));
    expect(new Set(ids).size).toBe(ids.length);
    const counts = new Map<string, number>();
    for (const id of ids) for (const ch of id.slice(4)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    expect(counts.size).toBe(62);
    // 110,000 characters over 62 symbols: about 1774 each. A modulo bias would push the first
    // symbols ~25% above the rest; allow a generous ±15% for randomness.
    for (const count of counts.values()) {
      expect(count).toBeGreaterThan(1774 * 0.85);
      expect(count).toBeLessThan(1774 * 1.15);
    }
  });
});

describe('isId', () => {
  it('rejects other prefixes, lengths, characters and non-strings', () => {
    const id = newId('pay');
    expect(isId('po', id)).toBe(false);
    expect(isId('pay', `${id}x`)).toBe(false);
    expect(isId('pay', id.slice(0, -1))).toBe(false);
    expect(isId('pay', `pay_${'-'.repeat(22)}`)).toBe(false);
    expect(isId('pay', `PAY_${id.slice(4)}`)).toBe(false);
    expect(isId('pay', ` ${id}`)).toBe(false);
    expect(isId('pay', 42)).toBe(false);
    expect(isId('pay', undefined)).toBe(false);
  });
});
