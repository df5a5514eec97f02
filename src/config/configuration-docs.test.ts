import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

describe('docs/configuration.md', () => {
  it('documents every variable the config parses, and no other', () => {
    const source = readFileSync(new URL('./config.ts', import.meta.url), 'utf8');
    const schema = source.slice(
      source.indexOf('const envSchema'),
      source.indexOf('});', source.indexOf('const envSchema')),
    );
    const parsed = [...schema.matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]!).sort();
    const docs = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    const documented = [...docs.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((m) => m[1]!).sort();
    expect(parsed.length).toBeGreaterThan(20);
    expect(documented).toEqual(parsed);
  });
});
