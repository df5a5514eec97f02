import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { agentModelFor } from '../src/agent/select-model.ts';
import { type FakeAnthropic, startFakeAnthropic } from './support/fake-anthropic.ts';

let fake: FakeAnthropic;

beforeAll(async () => {
  fake = await startFakeAnthropic();
});

afterAll(async () => {
  await fake.close();
});

const request = {
  instruction: 'What is my balance?',
  tools: [],
  callTool: async () => {
    throw new Error('no tool is called in this test');
  },
  signal: new AbortController().signal,
  now: new Date('2026-11-24T12:00:00Z'),
};

describe('agentModelFor', () => {
  it('runs the offline planner without ANTHROPIC_API_KEY', () => {
    const model = agentModelFor(loadConfig({}));
    expect(model.name).toMatch(/^offline-planner/);
  });

  // The Anthropic SDK is loaded by the first run, not when the model is chosen: the model must
  // still be Claude, configured from the environment, on that run and the next.
  it('runs Claude, configured from the environment, when ANTHROPIC_API_KEY is set', async () => {
    const model = agentModelFor(
      loadConfig({
        ANTHROPIC_API_KEY: 'sk-ant-select',
        ANTHROPIC_BASE_URL: fake.url,
        AGENT_MODEL: 'claude-opus-5-5',
      }),
    );
    expect(model.name).toBe('claude-opus-5-5');
    for (const text of ['First answer.', 'Second answer.']) {
      fake.script([() => ({ stop_reason: 'end_turn', content: [{ type: 'text', text }] })]);
      const result = await model.run(request);
      expect(result.reply).toBe(text);
      expect(fake.requests).toHaveLength(1);
      expect(fake.requests[0]!.body.model).toBe('claude-opus-5-5');
      const { authorization, 'x-api-key': apiKey } = fake.requests[0]!.headers;
      // The SDK sends the key as a bearer or as x-api-key, depending on its version.
      expect(String(authorization ?? apiKey)).toMatch(/^(Bearer )?sk-ant-select$/);
    }
  });

  it('says at start that a configured Claude model is deprecated or retired, and says nothing of a current one', () => {
    const said: string[] = [];
    const log = { warn: (m: string) => said.push(`warn: ${m}`), error: (m: string) => said.push(`error: ${m}`) };
    const config = (model?: string) =>
      loadConfig({ ANTHROPIC_API_KEY: 'sk-ant-select', ...(model ? { AGENT_MODEL: model } : {}) });
    agentModelFor(config(), log, new Date('2026-12-01T00:00:00Z'));
    expect(said).toEqual([]);
    agentModelFor(config('claude-sonnet-4-5'), log, new Date('2026-11-29T12:00:00Z'));
    agentModelFor(config('claude-sonnet-4-5'), log, new Date('2026-12-01T00:00:00Z'));
    expect(said).toEqual([
      expect.stringMatching(/^warn: AGENT_MODEL=claude-sonnet-4-5 is deprecated and retires on 2026-11-30/),
      expect.stringMatching(/^error: AGENT_MODEL=claude-sonnet-4-5 was retired by Anthropic on 2026-11-30/),
    ]);
    // The offline planner has no model to warn about.
    agentModelFor(loadConfig({ AGENT_MODEL: 'claude-sonnet-4-5' }), log, new Date('2026-12-01T00:00:00Z'));
    expect(said).toHaveLength(2);
  });

  it('defaults to the current Sonnet', () => {
    expect(agentModelFor(loadConfig({ ANTHROPIC_API_KEY: 'sk-ant-select' })).name).toBe('claude-sonnet-5-5');
  });
});
