import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';

describe('loadConfig', () => {
  it('gives the embedded defaults with an empty environment', () => {
    const config = loadConfig({});
    expect(config.port).toBe(3000);
    expect(config.checkoutPort).toBe(3001);
    expect(config.database).toEqual({ kind: 'pglite', dataDir: './.plainpay/pgdata' });
    expect(config.checkoutBaseUrl).toBe('http://localhost:3001');
    expect(config.rateLimit).toEqual({ perSecond: 100, redisUrl: undefined });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.database)).toBe(true);
  });

  it('selects Postgres when DATABASE_URL is set and ignores an empty one', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://u@h:5432/d' }).database).toEqual({
      kind: 'postgres',
      url: 'postgres://u@h:5432/d',
      preparedStatements: true,
    });
    expect(loadConfig({ DATABASE_URL: '' }).database.kind).toBe('pglite');
  });

  it('names every bad variable at once', () => {
    try {
      loadConfig({
        PORT: 'eighty',
        RATE_LIMIT_PER_SECOND: '0',
        DATABASE_URL: 'mysql://x',
        PLAINPAY_MASTER_KEY: 'short',
      });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const problems = (error as ConfigError).problems.join('\n');
      for (const name of [
        'PORT="eighty"',
        'RATE_LIMIT_PER_SECOND="0"',
        'DATABASE_URL="mysql://x"',
        'PLAINPAY_MASTER_KEY',
      ]) {
        expect(problems).toContain(name);
      }
    }
  });
});
