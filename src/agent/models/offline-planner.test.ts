import { describe, expect, it } from 'vitest';
import type { AgentModelRequest } from '../model.ts';
import { createOfflinePlanner } from './offline-planner.ts';

// The offline planner's questions (issue 32, item 2): where one reading of a message it asks back
// is most likely, the question carries that reading's calls, shown and never run before an answer.

const A = '0x037ddb6a7731ded7403ca8a4b6837d6a0cc4bd84';

function request(instruction: string, tools: string[]): AgentModelRequest & { called: string[] } {
  const called: string[] = [];
  return {
    instruction,
    tools: tools.map((name) => ({ name }) as unknown as AgentModelRequest['tools'][number]),
    async callTool(name) {
      called.push(name);
      return { status: 'error', error: { type: 'invalid_request_error', message: 'not in this test' } };
    },
    signal: new AbortController().signal,
    now: new Date('2026-03-18T10:00:00.000Z'),
    called,
  };
}

describe('offline planner questions', () => {
  it('proposes the corrected payout of a message opening with "Correction:", and calls nothing', async () => {
    const asked = request(`Correction: 400 usdc not 600, to ${A} for the freezer`, ['create_payout']);
    const result = await createOfflinePlanner().run(asked);
    expect(result.understood).toBe(false);
    expect(result.question?.proposed).toEqual([
      { name: 'create_payout', input: { amount: 400, asset: 'USDC', to_address: A, memo: 'the freezer' } },
    ]);
    expect(result.reply).toContain('Most likely you mean: Pay out 400');
    expect(asked.called).toEqual([]);
  });
  it('proposes nothing the key cannot do, or where no reading is most likely', async () => {
    const noScope = await createOfflinePlanner().run(request(`Correction: 400 usdc to ${A}`, ['get_balance']));
    expect(noScope.question?.proposed).toEqual([]);
    const unclear = await createOfflinePlanner().run(request(`pay ${A} 50 usdc, my bad`, ['create_payout']));
    expect(unclear.question?.proposed).toEqual([]);
  });
});
