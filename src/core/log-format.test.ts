import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config.ts';
import { chooseLogFormat } from './log-format.ts';

describe('the log format serve writes', () => {
  it('is pretty on a terminal and JSON into a pipe, unless LOG_FORMAT says which', () => {
    expect(chooseLogFormat('auto', true)).toBe('pretty');
    expect(chooseLogFormat('auto', false)).toBe('json');
    expect(chooseLogFormat('json', true)).toBe('json');
    expect(chooseLogFormat('json', false)).toBe('json');
    expect(chooseLogFormat('pretty', false)).toBe('pretty');
    expect(chooseLogFormat('pretty', true)).toBe('pretty');
  });

  it('LOG_FORMAT is auto by default, and a word it does not know is a configuration error', () => {
    expect(loadConfig({}).logFormat).toBe('auto');
    expect(loadConfig({ LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(() => loadConfig({ LOG_FORMAT: 'text' })).toThrow(/LOG_FORMAT="text"/);
  });
});
