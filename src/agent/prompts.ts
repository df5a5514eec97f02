import { sha256Hex } from '../core/sha256.ts';
import { readFileSync } from 'node:fs';

const SYSTEM_PROMPT_PATH = new URL('../../prompts/system.md', import.meta.url);

export interface SystemPrompt {
  text: string;
  /** First 12 hex characters of its SHA-256: recorded with every run, so a log says which prompt ran. */
  version: string;
}

let cached: SystemPrompt | undefined;

/** prompts/system.md, read once at start. */
export function systemPrompt(): SystemPrompt {
  if (!cached) {
    const text = readFileSync(SYSTEM_PROMPT_PATH, 'utf8').trim();
    cached = { text, version: sha256Hex(text).slice(0, 12) };
  }
  return cached;
}
