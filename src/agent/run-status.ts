/**
 * Which failed calls of a run a later call fixed (issue 32: run status from each action's final
 * state). A model that gets an error back may make the call again, corrected: a payout to a
 * mistyped address, then to the right one. The failed call is then not that action's final state,
 * and must not make the run `failed` when money moved (a client would retry and pay twice). One
 * rule for the runtime (runtime.ts, outcomeOf) and the eval world that mirrors it.
 */

export interface RunCall {
  tool: string;
  input: unknown;
  failed: boolean;
}

/** The indexes of failed calls that a later call of the same tool, on the same target, did not fail. */
export function fixedLater(calls: readonly RunCall[]): Set<number> {
  const fixed = new Set<number>();
  for (const [i, call] of calls.entries()) {
    if (call.failed && calls.slice(i + 1).some((later) => !later.failed && sameTarget(call, later))) fixed.add(i);
  }
  return fixed;
}

function fields(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** Two calls of one tool aimed at the same thing: the same payment, recipient or amount. */
function sameTarget(a: RunCall, b: RunCall): boolean {
  if (a.tool !== b.tool) return false;
  const x = fields(a.input);
  const y = fields(b.input);
  const same = (key: string): boolean =>
    x[key] !== undefined && String(x[key]).toLowerCase() === String(y[key]).toLowerCase();
  switch (a.tool) {
    case 'create_payout':
      return same('to_address') || same('amount');
    case 'refund_payment':
      return same('payment_id');
    case 'split_revenue':
      return same('payment_id') || same('amount');
    case 'create_payment':
      return (same('amount') && same('currency')) || same('reference');
    default:
      // A read tried again: its last answer is the one that counts.
      return true;
  }
}
