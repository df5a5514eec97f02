/**
 * The Claude models the agent knows: which one it uses when AGENT_MODEL is not set, the output
 * budget a turn gets, and the retirement dates Anthropic has announced for models an operator may
 * still have configured. No imports: the config reads its defaults from here without loading the SDK.
 *
 * Sources: the model list of @anthropic-ai/sdk 1.12.0 (`Model` in resources/messages, and its
 * deprecated-models table, which gives claude-sonnet-4-5 an end of life on 2026-11-30), and
 * Anthropic's model deprecations page (platform.claude.com/docs/en/about-claude/model-deprecations)
 * and models overview, where Claude Sonnet 5.5 is the current Sonnet. Requests to a model past its
 * retirement date fail (404 `not_found_error`), so a default must never be a deprecated model.
 * When Anthropic announces a new retirement, add it here; `npm test` checks the default is not in it.
 */
export const DEFAULT_AGENT_MODEL = 'claude-sonnet-5-5';

/**
 * AGENT_MAX_TOKENS' default. Current models think by default (adaptive thinking, effort `high` on
 * Sonnet 5.5) and their thinking counts against `max_tokens`, so the old 4,096 cut turns that
 * planned a few tool calls after some thought. 16,000 leaves room for both; the model stops well
 * before it on a turn that needs less, and a turn cut at the limit still runs none of its calls.
 */
export const DEFAULT_MAX_TOKENS = 16_000;

/** Announced retirement dates (UTC, the first day requests fail) of models still seen in configs. */
export const CLAUDE_RETIREMENTS: Readonly<Record<string, string>> = Object.freeze({
  'claude-sonnet-4-5': '2026-11-30',
  'claude-sonnet-4-5-20250929': '2026-11-30',
  'claude-mythos-preview': '2026-06-30',
  'claude-sonnet-4-0': '2026-06-15',
  'claude-sonnet-4-20250514': '2026-06-15',
  'claude-opus-4-0': '2026-06-15',
  'claude-opus-4-20250514': '2026-06-15',
});

export type ModelLifecycle =
  | { state: 'active' }
  | { state: 'deprecated'; retires: string }
  | { state: 'retired'; retired: string };

/** Where `model` stands on `now`, from the announced dates; a model with no announcement is active. */
export function modelLifecycle(model: string, now: Date): ModelLifecycle {
  const date = CLAUDE_RETIREMENTS[model];
  if (date === undefined) return { state: 'active' };
  return now.getTime() >= Date.parse(`${date}T00:00:00Z`)
    ? { state: 'retired', retired: date }
    : { state: 'deprecated', retires: date };
}

/**
 * What an operator is told at start about the configured model, or undefined when all is well.
 * A retired model does not stop the service (payments do not depend on the agent), but every
 * Claude run would fail, so it is said at error level.
 */
export function modelLifecycleWarning(
  model: string,
  now: Date,
): { level: 'warn' | 'error'; message: string } | undefined {
  const lifecycle = modelLifecycle(model, now);
  if (lifecycle.state === 'active') return undefined;
  if (lifecycle.state === 'retired') {
    return {
      level: 'error',
      message: `AGENT_MODEL=${model} was retired by Anthropic on ${lifecycle.retired}: every Claude agent run will fail. Set AGENT_MODEL=${DEFAULT_AGENT_MODEL} (or unset it).`,
    };
  }
  return {
    level: 'warn',
    message: `AGENT_MODEL=${model} is deprecated and retires on ${lifecycle.retires}; from that day every Claude agent run fails. Move to ${DEFAULT_AGENT_MODEL} (or unset AGENT_MODEL).`,
  };
}
