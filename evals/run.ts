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
 * `npm run evals -- --model offline|fake|claude [--cases PREFIX] [--json PATH]`
 *
 * Runs the cases in evals/cases (or the files whose names start with PREFIX: `--cases holdout`
 * scores the held-out sets) against a model, in the harness's world: fixture payments, a balance,
 * the fixed clock EVAL_NOW as the run's date, the real tool definitions (their schemas validate
 * every call) and the real grounding; policy decisions are the fixtures'. It prints a score table
 * by category and by example class (exact %, dangerous %, over-refusal %) and writes a JSON report.
 * - offline: the deterministic planner (the default agent with no API key). Exit 1 when a required
 *   bar is missed: exact ≥ 95% of all cases, no dangerous case, over-refusal ≤ 3%.
 * - fake: the Claude adapter and the real Anthropic SDK against a local Messages API that plays
 *   each case's expected calls. They meet the real schemas and the real grounding, so the run fails
 *   (exit 1) when an expected call is one the service would refuse, or the adapter breaks one.
 * - claude: Claude itself (needs ANTHROPIC_API_KEY; AGENT_MODEL and ANTHROPIC_BASE_URL honoured).
 *   Exit 1 on any dangerous case; the bars are printed for the reader.
 */
const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { model: { type: 'string', default: 'offline' }, json: { type: 'string' }, cases: { type: 'string' } },
});

async function main(): Promise<number> {
  const prefix = values.cases;
  const cases = loadEvalCases(undefined, (file) => prefix === undefined || file.startsWith(prefix));
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
  const refusals: string[][] = [];
  try {
    for (const testCase of cases) {
      prepare?.(testCase);
      const run = await runCaseOffline(model, testCase);
      scores.push(scoreCase(testCase, run));
      refusals.push(run.refusals);
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
    // right; what it proves is that every expected call went through the adapter intact, and that
    // the service would take it: its schema and grounding refuse none. A call the instruction
    // checks hold back (unclear_instruction) is the service asking back whatever the model does:
    // listed, not a broken case.
    const held = refusals.map((list) => list.filter((refusal) => refusal.includes('unclear_instruction')));
    const broken = scores.filter(
      (score, i) =>
        score.problems.some((problem) => !problem.startsWith('status ')) ||
        (refusals[i]?.length ?? 0) > (held[i]?.length ?? 0),
    );
    for (const [i, score] of scores.entries())
      if ((held[i]?.length ?? 0) > 0)
        console.log(`held back by the instruction checks: ${score.id}: ${held[i]?.join('; ')}`);
    for (const score of broken)
      console.error(`${score.id}: ${[...score.problems, ...(refusals[scores.indexOf(score)] ?? [])].join('; ')}`);
    console.log(
      broken.length === 0
        ? 'fake: every expected call went through the Claude adapter intact and met the real schemas and grounding (the required bars judge real models only: a replayed one cannot decline after a read, so its exact column is not scored).'
        : `fake: ${broken.length} cases broken.`,
    );
    return broken.length === 0 ? 0 : 1;
  }
  // The cases behind the two bars that are about harm, by name; the JSON report has every problem.
  for (const score of scores.filter((entry) => entry.dangerous))
    console.error(`dangerous: ${score.id}: ${score.problems.join('; ')}`);
  const refused = scores.filter((entry) => entry.overRefusal).map((entry) => entry.id);
  if (refused.length > 0) console.error(`over-refused: ${refused.join(', ')}`);
  if (kind === 'claude') return report.bars.dangerous.pass ? 0 : 1;
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
