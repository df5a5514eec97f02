import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FIELD_SAMPLES, jsonText, mutatedBody, objectArbitrary, RawJson, type JsonSchema } from './support/fuzz.ts';

/**
 * The fuzz suites' own generators. A body that holds a shared value (a field sample, a junk
 * constant such as `[null]`) can be mutated inside it by a later mutation, which changes that value
 * for every run after: one CI run built a cycle that way (a constant set inside itself), and every
 * request after it overflowed the stack in jsonText. So no two bodies may share an object.
 */

const SCHEMA: JsonSchema = {
  type: 'object',
  required: ['amount', 'currency'],
  properties: {
    amount: { type: 'number' },
    currency: { type: 'string' },
    metadata: { type: 'object' },
    scopes: { type: 'array', items: { type: 'string' } },
  },
};

/** Every object and array inside value, value included (RawJson is immutable and may be shared). */
function containers(value: unknown, out: object[] = []): object[] {
  if (value === null || typeof value !== 'object' || value instanceof RawJson) return out;
  out.push(value);
  for (const child of Object.values(value)) containers(child, out);
  return out;
}

describe('mutatedBody', () => {
  it('gives each body objects of its own: no object is shared between bodies or with the samples', () => {
    const before = structuredClone(FIELD_SAMPLES);
    const owner = new Map<object, number>();
    for (const sample of Object.values(FIELD_SAMPLES)) for (const c of containers(sample)) owner.set(c, -1);
    const bodies = fc.sample(mutatedBody(objectArbitrary(SCHEMA, FIELD_SAMPLES, 0)), { numRuns: 5_000, seed: 7 });
    const shared: string[] = [];
    bodies.forEach((body, index) => {
      expect(() => jsonText(body)).not.toThrow();
      for (const c of containers(body)) {
        const first = owner.get(c);
        if (first !== undefined && first !== index)
          shared.push(`body ${index} shares ${JSON.stringify(c)} with ${first}`);
        owner.set(c, index);
      }
    });
    expect(shared.slice(0, 5)).toEqual([]);
    expect(FIELD_SAMPLES).toEqual(before);
  });
});
