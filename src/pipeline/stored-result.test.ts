import { describe, expect, it } from 'vitest';
import { parseJson, stringifyJson } from '../core/json-text.ts';
import { notCheckedResult, notCheckedResultText } from './execute-tool.ts';

describe('notCheckedResultText', () => {
  // A create's stored response is built around the output's text; a replay parses it back, so it
  // must be exactly what stringifyJson writes for the whole result, tagged metadata included.
  it('is what stringifyJson writes for notCheckedResult of the same output', () => {
    const outputs = [
      { id: 'pay_1', amount: 5000, metadata: null },
      { id: 'pay_2', metadata: parseJson('{"f":12345678901234567890,"p":1.50,"e":"\\u00e9","1":2}') },
      [],
      'text',
    ];
    for (const output of outputs) {
      expect(notCheckedResultText(stringifyJson(output))).toBe(stringifyJson(notCheckedResult(output)));
    }
  });
});
