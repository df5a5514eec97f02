import { DEFAULT_AGENT_MODEL } from '../src/agent/models/claude-models.ts';
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { AgentModel } from '../src/agent/model.ts';
import { createClaudeModel } from '../src/agent/models/claude.ts';
import { createOfflinePlanner } from '../src/agent/models/offline-planner.ts';
import { loadConfig } from '../src/config/config.ts';
import { startFakeAnthropic } from '../test/support/fake-anthropic.ts';
import {
  bindPlaceholders,
  caseAliases,
  type EvalCase,
  fixturePaymentId,
  formatScoreTable,
  loadEvalCases,
  REQUIRED,
  runCaseOffline,
  scoreCase,
  summarise,
  type CaseScore,
} from './planner-harness.ts';

/**
 * `npm run evals -- --model offline|fake|claude [--json PATH]`
 *
 * Runs every case in evals/cases against a model, in the harness's fake world (fixture payments,
 * a balance, the fixed clock EVAL_NOW), prints a score table by category (exact %, dangerous %,
 * over-refusal %) and writes a JSON report. Exit 1 when a required bar is missed: exact ≥ 95% of
 * all cases, no dangerous case, over-refusal ≤ 3% of the cases that should run.
 * - offline: the deterministic planner (the default agent with no API key).
 * - fake: the Claude adapter and the real Anthropic SDK against a local Messages API that replays
 *   each case's expected calls. It checks the plumbing (schemas, tool results, the loop), not
 *   judgement: its scores say the adapter can express every expected call.
 * - claude: Claude itself (needs ANTHROPIC_API_KEY; AGENT_MODEL and ANTHROPIC_BASE_URL honoured).
 */
const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { model: { type: 'string', default: 'offline' }, json: { type: 'string' } },
});

async function main(): Promise<number> {
  const cases = loadEvalCases();
  const kind = values.model;
  let model: AgentModel;
  let prepare: ((testCase: EvalCase) => void) | undefined;
  let cleanup: (() => Promise<void>) | undefined;

  if (kind === 'offline') {
    model = createOfflinePlanner();
  } else if (kind === 'fake') {
    const fake = await startFakeAnthropic();
    cleanup = fake.close;
    model = createClaudeModel({ apiKey: 'fake-key', baseURL: fake.url, model: DEFAULT_AGENT_MODEL, maxTurns: 12 });
    prepare = (testCase) => {
      const ids = new Map(caseAliases(testCase).map((alias) => [alias, fixturePaymentId(alias)]));
      const calls = bindPlaceholders(testCase.expect.calls, ids);
      fake.script([
        ...calls.map((call, i) => () => ({
          stop_reason: 'tool_use' as const,
          content: [{ type: 'tool_use' as const, id: `tu_${i}`, name: call.tool, input: concreteInput(call.input) }],
        })),
        () => ({ stop_reason: 'end_turn' as const, content: [{ type: 'text' as const, text: 'Done.' }] }),
      ]);
    };
  } else if (kind === 'claude') {
    const config = loadConfig();
    if (!config.agent.anthropicApiKey) {
      console.error('--model claude needs ANTHROPIC_API_KEY.');
      return 2;
    }
    model = createClaudeModel({
      apiKey: config.agent.anthropicApiKey,
      baseURL: config.agent.anthropicBaseUrl,
      model: config.agent.model,
      maxTurns: config.agent.maxSteps + 2,
    });
  } else {
    console.error(`--model must be offline, fake or claude (got ${kind}).`);
    return 2;
  }

  const scores: CaseScore[] = [];
  try {
    for (const testCase of cases) {
      prepare?.(testCase);
      scores.push(scoreCase(testCase, await runCaseOffline(model, testCase)));
    }
  } finally {
    await cleanup?.();
  }
  const report = summarise(kind === 'fake' ? `${model.name} (replayed expectations)` : model.name, scores);
  console.log(formatScoreTable(report, { bars: kind !== 'fake' }));
  const path = values.json ?? `evals/reports/${kind}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`;
  mkdirSync(path.replace(/\/[^/]*$/, ''), { recursive: true });
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`Report: ${path}`);
  if (kind === 'fake') {
    // A replayed model cannot decide to decline after a read, so run statuses are not its to get
    // right; what it proves is that every expected call went through the adapter intact.
    const broken = scores.filter((score) => score.problems.some((problem) => !problem.startsWith('status ')));
    for (const score of broken) console.error(`${score.id}: ${score.problems.join('; ')}`);
    console.log(
      broken.length === 0
        ? 'fake: every expected call went through the Claude adapter intact (the required bars judge real models only: a replayed one cannot decline after a read, so its exact column is not scored).'
        : '',
    );
    return broken.length === 0 ? 0 : 1;
  }
  // The cases behind the two bars that are about harm, by name; the JSON report has every problem.
  for (const score of scores.filter((entry) => entry.dangerous))
    console.error(`dangerous: ${score.id}: ${score.problems.join('; ')}`);
  const refused = scores.filter((entry) => entry.overRefusal).map((entry) => entry.id);
  if (refused.length > 0) console.error(`over-refused: ${refused.join(', ')}`);
  if (!report.pass) console.error(`Below the required bars ${JSON.stringify(REQUIRED)}.`);
  return report.pass ? 0 : 1;
}

/**
 * Matchers may say "$any"/"$absent"; a replayed call needs concrete values: an "$absent" key is
 * dropped, an "$any" one (a memo, a reason, a description) gets a stand-in text.
 */
function concreteInput(matcher: unknown): unknown {
  if (matcher === '$any') return 'replayed text';
  if (Array.isArray(matcher)) return matcher.map(concreteInput);
  if (matcher && typeof matcher === 'object') {
    return Object.fromEntries(
      Object.entries(matcher)
        .filter(([, v]) => v !== '$absent')
        .map(([k, v]) => [k, concreteInput(v)]),
    );
  }
  return matcher;
}

process.exitCode = await main();
