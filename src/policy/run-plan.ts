import { isAppError } from '../core/errors.ts';
import type { AnyTool, ToolContext } from '../core/tool.ts';
import { parseInput } from '../core/validation.ts';

/** One call an agent run declared it will make (ExecuteOptions.runPlan). */
export interface DeclaredCall {
  readonly tool: AnyTool;
  readonly input: unknown;
}

/** What a run's declared plan moves, in settlement minor units, and over how many money calls. */
export interface DeclaredSpend {
  readonly settlementMinor: bigint;
  readonly actions: number;
}

export const NOTHING_DECLARED: DeclaredSpend = Object.freeze({ settlementMinor: 0n, actions: 0 });

/**
 * What a run's declared plan moves: each planned money call's amount, from its own tool's policy
 * extractor on its validated input, exactly as the call itself will be judged (a refund in NGN is
 * converted the same way). A planned call that fails validation, or that its extractor refuses
 * (an unknown payment), or whose amount cannot be known, adds nothing: it cannot move that money
 * as declared, and when it is called it is judged, and refused, on its own. The run's recorded
 * total still counts whatever does run, so the plan can only make a decision stricter.
 */
export async function declaredSpend(plan: readonly DeclaredCall[], ctx: ToolContext): Promise<DeclaredSpend> {
  let settlementMinor = 0n;
  let actions = 0;
  for (const { tool, input } of plan) {
    if (tool.effect !== 'money' || tool.policy === undefined) continue;
    let amount: bigint | undefined;
    try {
      amount = (await tool.policy(parseInput(tool.input, input), ctx)).amountSettlementMinor;
    } catch (error) {
      // A refusal is the planned call's own problem; anything else is a fault, and refuses this action.
      if (isAppError(error)) continue;
      throw error;
    }
    if (amount === undefined || amount < 0n) continue;
    settlementMinor += amount;
    actions += 1;
  }
  return { settlementMinor, actions };
}
