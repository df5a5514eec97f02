import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from './config.ts';

/**
 * The master key that seals stored secrets. From PLAINPAY_MASTER_KEY when set (required when
 * instances run on several machines, which must share it); otherwise read from, or created
 * once in, `<PLAINPAY_DATA_DIR>/master.key` with mode 0600.
 */
export function loadMasterKey(config: Config): Buffer {
  if (config.masterKey) return Buffer.from(config.masterKey, 'base64');
  const path = join(config.dataDir, 'master.key');
  try {
    return decode(readFileSync(path, 'utf8'), path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(config.dataDir, { recursive: true });
  const key = randomBytes(32);
  try {
    writeFileSync(path, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    return key;
  } catch (error) {
    // Another process created it between our read and write: use theirs.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return decode(readFileSync(path, 'utf8'), path);
    throw error;
  }
}

function decode(text: string, path: string): Buffer {
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== 32) throw new Error(`${path} does not hold a base64 32-byte key`);
  return key;
}
