import type { AgentModel, AgentModelRequest, AgentModelResult, ToolCallOutcome } from '../model.ts';
import {
  describeLookup,
  lookupOf,
  lookupRead,
  matchLookup,
  selectLookup,
  type PaymentFacts,
  type PlannedCall,
  rangeKey,
  readsFor,
  resolveCalls,
  type RevenueFacts,
  toolsFor,
  withPayment,
} from '../planner/calls.ts';
import { understand } from '../planner/plan.ts';
import type { Step } from '../planner/steps.ts';
import {
  describeListed,
  describeOutcome,
  lookupProblem,
  notUnderstoodReply,
  readListedPayments,
  readPaymentFacts,
  readRevenueFacts,
} from '../planner/reply.ts';

/**
 * The offline planner: the default agent model when no ANTHROPIC_API_KEY is set. Deterministic,
 * in stages under src/agent/planner/: tokens (lexer) → grammar (clause.ts the shapes, phrases.ts
 * shared phrase readers, intents.ts, clauses.ts the splitter and corrections, slots.ts) → plan
 * (steps and exact tool calls) → checks (every meaningful word placed) → reply. docs/agent.md says what it understands. Its rules:
 *
 * - It never guesses a recipient, an amount, a currency or a payment. What it cannot place, it
 *   names in the reply, and nothing runs.
 * - All or nothing: a message runs only when every part of it is understood; the reads a money
 *   step depends on run first, so a problem stops the message before money moves.
 * - Tool results are data: it reads only typed fields (amounts, currencies, statuses, ids).
 * - It declares its money calls before running them, so policy judges the message's total.
 * - Every call goes through `callTool`: the real pipeline (validation, scopes, grounding, policy,
 *   idempotency, action log).
 */

export const OFFLINE_PLANNER_NAME = 'offline-planner/2';

/**
 * Payments named by reference or description are found first, with list_payments (docs/agent.md,
 * "By intent": the merchant's own reference, then the description): exactly one match is acted on, none or
 * several are asked back with the candidates in typed fields. A status question is answered by the
 * list itself. What the list says of a found payment (amount, currency, refunds) stands for a read.
 */
async function findPayments(
  steps: readonly Step[],
  request: AgentModelRequest,
): Promise<{ steps: Step[]; known: Map<string, PaymentFacts>; lines: string[] } | AgentModelResult> {
  const found: Step[] = [];
  const known = new Map<string, PaymentFacts>();
  const lines: string[] = [];
  for (const step of steps) {
    const lookup = lookupOf(step);
    if (lookup === undefined) {
      found.push(step);
      continue;
    }
    if (request.signal.aborted)
      return { understood: true, reply: "Stopped before doing anything: the run's step or time budget was spent." };
    const read = lookupRead(lookup);
    const outcome = await request.callTool(read.tool, read.input);
    if (outcome.status !== 'ok') {
      const message = outcome.status === 'error' ? outcome.error.message : 'unexpected confirmation on a read';
      return {
        understood: true,
        reply: `${read.label}: I could not read your payments (${message}), so I did nothing.`,
      };
    }
    const matches = matchLookup(lookup, readListedPayments(outcome.output));
    const selected = selectLookup(lookup, matches);
    if (selected === undefined)
      return { understood: false, reply: `${lookupProblem(lookup, matches)}.`, question: { proposed: [] } };
    // The selection is said before any action line: what "all the … orders" took, by id.
    if ('all' in lookup)
      lines.push(`Selected for ${describeLookup(lookup)}: ${selected.map(describeListed).join('; ')}.`);
    for (const match of selected) {
      known.set(match.id, match.facts);
      if (step.kind === 'payment_status') lines.push(`${describeListed(match)}.`);
      else found.push(withPayment(step, match.id));
    }
  }
  return { steps: found, known, lines };
}

async function readFirst(
  steps: readonly Step[],
  known: ReadonlyMap<string, PaymentFacts>,
  request: AgentModelRequest,
): Promise<
  { payments: Map<string, PaymentFacts>; revenue: Map<string, RevenueFacts> } | { reply: string; understood: boolean }
> {
  const payments = new Map<string, PaymentFacts>(known);
  const revenue = new Map<string, RevenueFacts>();
  const seen = new Set<string>();
  for (const read of steps.flatMap(readsFor)) {
    const key = `${read.tool}:${JSON.stringify(read.input)}`;
    if (seen.has(key) || (read.tool === 'get_payment' && payments.has(String(read.input.payment_id)))) continue;
    seen.add(key);
    if (request.signal.aborted)
      return { understood: true, reply: "Stopped before doing anything: the run's step or time budget was spent." };
    const outcome = await request.callTool(read.tool, read.input);
    if (outcome.status !== 'ok') {
      const message = outcome.status === 'error' ? outcome.error.message : 'unexpected confirmation on a read';
      return { understood: true, reply: `${read.label}: I could not read it (${message}), so I did nothing.` };
    }
    if (read.tool === 'get_payment') {
      const facts = readPaymentFacts(outcome.output);
      if (facts === undefined)
        return {
          understood: false,
          reply: `${String(read.input.payment_id)} has no amount I can read, so I did nothing.`,
        };
      payments.set(String(read.input.payment_id), facts);
    } else {
      const facts = readRevenueFacts(outcome.output);
      if (facts === undefined)
        return { understood: false, reply: `${read.label}: the result has no amount I can read, so I did nothing.` };
      revenue.set(rangeKey({ from: new Date(String(read.input.from)), to: new Date(String(read.input.to)) }), facts);
    }
  }
  return { payments, revenue };
}

async function runSteps(steps: readonly Step[], request: AgentModelRequest): Promise<AgentModelResult> {
  // The key's tools, checked before anything runs: a message is never half-executed because a
  // later step needs a scope the key lacks.
  const available = new Set(request.tools.map((tool) => tool.name));
  const effects = new Map(request.tools.map((tool) => [tool.name, tool.effect]));
  const missing = [...new Set(steps.flatMap(toolsFor))].filter((name) => !available.has(name));
  if (missing.length > 0)
    return {
      understood: false,
      reply: `This API key cannot use ${missing.join(', ')}, so I did nothing. Ask for a key with the needed scope.`,
    };

  const named = await findPayments(steps, request);
  if ('reply' in named) return named;
  const facts = await readFirst(named.steps, named.known, request);
  if ('reply' in facts) return facts;
  const resolved = resolveCalls(named.steps, facts);
  if (!Array.isArray(resolved))
    return {
      understood: false,
      reply: `I cannot do that as asked: ${resolved.problem}. I did nothing.`,
      question: { proposed: [] },
    };

  // Policy judges the message's money as one decision: four 900 USDC payouts are 3,600 USDC.
  request.declarePlan?.(
    resolved
      .filter((call) => effects.get(call.tool) === 'money')
      .map((call) => ({ name: call.tool, input: call.input })),
  );

  const lines: string[] = [...named.lines];
  for (const [index, call] of resolved.entries()) {
    if (request.signal.aborted) {
      lines.push(`Stopped: the run's step or time budget was spent. Not done: ${labels(resolved.slice(index))}.`);
      break;
    }
    const outcome: ToolCallOutcome = await request.callTool(call.tool, call.input);
    // Reads are answered here; every write and money action is restated by the runtime from the
    // action log (amount, recipient, memo, outcome), the same way for every model.
    const isRead = effects.get(call.tool) === 'read';
    if (isRead || request.restatesActions !== true) lines.push(describeOutcome(call, outcome, isRead));
    // Later steps may rely on earlier ones ("then"): after a failure, stop and say what did not run.
    if (outcome.status === 'error' && index < resolved.length - 1) {
      lines.push(`Stopped after that failure. Not done: ${labels(resolved.slice(index + 1))}.`);
      break;
    }
  }
  return { understood: true, reply: lines.join('\n') };
}

/**
 * The calls of the most likely reading of a message that is asked back (issue 32, item 2): shown
 * with the question, never run before the merchant answers. Only a reading whose calls need no read
 * and no lookup, and only tools this key may use; else nothing is proposed.
 */
function proposedCalls(steps: readonly Step[], request: AgentModelRequest): PlannedCall[] {
  if (steps.length === 0 || steps.some((step) => readsFor(step).length > 0 || lookupOf(step) !== undefined)) return [];
  const available = new Set(request.tools.map((tool) => tool.name));
  if (steps.flatMap(toolsFor).some((name) => !available.has(name))) return [];
  const resolved = resolveCalls(steps, { payments: new Map(), revenue: new Map() });
  return Array.isArray(resolved) ? resolved : [];
}

function proposalLine(calls: readonly PlannedCall[]): string {
  return `Most likely you mean: ${labels(calls)}. Answer "yes" to do exactly that (or give the right amount); nothing moves until you answer.`;
}

function labels(calls: readonly PlannedCall[]): string {
  return calls.map((call) => call.label).join('; ');
}

/**
 * The offline planner (docs/agent.md, "What the agent understands"). What it cannot understand
 * it asks back: the run waits for the merchant's answer, and then the planner reads the
 * instruction the conversation comes to (conversation.ts, conversationInstruction), as grounding does.
 */
export function createOfflinePlanner(): AgentModel {
  return {
    name: OFFLINE_PLANNER_NAME,
    async run(request: AgentModelRequest): Promise<AgentModelResult> {
      const understanding = understand(request.instruction, request.now);
      if (!understanding.ok) {
        const proposed = proposedCalls(understanding.proposal ?? [], request);
        const reply = notUnderstoodReply(understanding.problems);
        return {
          understood: false,
          reply: proposed.length === 0 ? reply : `${reply}\n\n${proposalLine(proposed)}`,
          question: { proposed: proposed.map((call) => ({ name: call.tool, input: call.input })) },
        };
      }
      return runSteps(understanding.steps, request);
    },
  };
}
