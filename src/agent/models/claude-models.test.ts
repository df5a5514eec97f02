import { describe, expect, it } from 'vitest';
import { SDK_MODELS, SDK_RETIREMENTS } from '../../../test/support/fake-anthropic.ts';
import {
  CLAUDE_RETIREMENTS,
  DEFAULT_AGENT_MODEL,
  DEFAULT_MAX_TOKENS,
  modelLifecycle,
  modelLifecycleWarning,
} from './claude-models.ts';

describe('the Claude models the agent knows', () => {
  it('defaults to a model the pinned SDK lists and has announced no retirement for', () => {
    expect(SDK_MODELS).toContain(DEFAULT_AGENT_MODEL);
    expect(SDK_RETIREMENTS).not.toHaveProperty(DEFAULT_AGENT_MODEL);
    expect(CLAUDE_RETIREMENTS).not.toHaveProperty(DEFAULT_AGENT_MODEL);
    // Room for adaptive thinking and a few tool calls, within Sonnet 5.5's 128K output.
    expect(DEFAULT_MAX_TOKENS).toBeGreaterThanOrEqual(8192);
    expect(DEFAULT_MAX_TOKENS).toBeLessThanOrEqual(128_000);
  });

  it('knows every retirement the pinned SDK announces, on the same day', () => {
    // A newer SDK with a new deprecation fails here until the table (and the default) follow it.
    for (const [model, date] of Object.entries(SDK_RETIREMENTS)) {
      expect(CLAUDE_RETIREMENTS[model], model).toBe(date.toISOString().slice(0, 10));
    }
  });

  it('says where a model stands on a given day', () => {
    expect(modelLifecycle('claude-sonnet-4-5', new Date('2026-11-29T23:59:59Z'))).toEqual({
      state: 'deprecated',
      retires: '2026-11-30',
    });
    expect(modelLifecycle('claude-sonnet-4-5', new Date('2026-11-30T00:00:00Z'))).toEqual({
      state: 'retired',
      retired: '2026-11-30',
    });
    expect(modelLifecycle(DEFAULT_AGENT_MODEL, new Date('2026-11-30T00:00:00Z'))).toEqual({ state: 'active' });
  });

  it('warns of a deprecated model and errs on a retired one, naming the setting and the way out', () => {
    expect(modelLifecycleWarning(DEFAULT_AGENT_MODEL, new Date('2026-11-30T00:00:00Z'))).toBeUndefined();
    expect(modelLifecycleWarning('claude-sonnet-4-5', new Date('2026-11-29T12:00:00Z'))).toEqual({
      level: 'warn',
      message: expect.stringMatching(
        /AGENT_MODEL=claude-sonnet-4-5 is deprecated and retires on 2026-11-30.*claude-sonnet-5-5/,
      ),
    });
    expect(modelLifecycleWarning('claude-sonnet-4-5', new Date('2026-12-01T12:00:00Z'))).toEqual({
      level: 'error',
      message: expect.stringMatching(/retired by Anthropic on 2026-11-30: every Claude agent run will fail/),
    });
  });
});
