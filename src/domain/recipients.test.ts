import { describe, expect, it } from 'vitest';
import {
  checkRecipient,
  isBurnAddress,
  isServiceContract,
  normaliseRecipient,
  TransferRefusedError,
} from './recipients.ts';

const LOWER = '0x52908400098527886e0f7030069857d2e4169ee7';
const CHECKSUMMED = '0x52908400098527886E0F7030069857D2E4169EE7';

describe('recipient rules', () => {
  it('compares addresses without their case', () => {
    expect(normaliseRecipient(CHECKSUMMED)).toBe(LOWER);
  });

  it('takes any casing and gives the checksummed address', () => {
    expect(checkRecipient(LOWER)).toBe(CHECKSUMMED);
  });

  it('refuses what is not an address, and the zero address, which burns tokens', () => {
    for (const bad of ['', '0x1234', 'not an address', `${LOWER}00`]) {
      expect(() => checkRecipient(bad)).toThrow(TransferRefusedError);
    }
    expect(isBurnAddress(`0x${'0'.repeat(40)}`)).toBe(true);
    expect(() => checkRecipient(`0x${'0'.repeat(40)}`)).toThrow('zero address');
  });

  it("knows the service's own contracts in any casing, and nothing else", () => {
    const contracts = { tokenAddress: CHECKSUMMED, batchAddress: `0x${'ab'.repeat(20)}` };
    expect(isServiceContract(LOWER, contracts)).toBe(true);
    expect(isServiceContract(`0x${'AB'.repeat(20)}`, contracts)).toBe(true);
    expect(isServiceContract(`0x${'cd'.repeat(20)}`, contracts)).toBe(false);
  });
});
