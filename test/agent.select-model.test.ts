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
        AGENT_MODEL: 'claude-select-test',
      }),
    );
    expect(model.name).toBe('claude-select-test');
    for (const text of ['First answer.', 'Second answer.']) {
      fake.script([() => ({ stop_reason: 'end_turn', content: [{ type: 'text', text }] })]);
      const result = await model.run(request);
      expect(result.reply).toBe(text);
      expect(fake.requests).toHaveLength(1);
      expect(fake.requests[0]!.body.model).toBe('claude-select-test');
      const { authorization, 'x-api-key': apiKey } = fake.requests[0]!.headers;
      // The SDK sends the key as a bearer or as x-api-key, depending on its version.
      expect(String(authorization ?? apiKey)).toMatch(/^(Bearer )?sk-ant-select$/);
    }
  });
});
