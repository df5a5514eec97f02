import type { Config } from '../config/config.ts';
import type { AgentModel } from './model.ts';
import type { ClaudeOptions } from './models/claude.ts';
import { modelLifecycleWarning } from './models/claude-models.ts';
import { createOfflinePlanner } from './models/offline-planner.ts';

/** Where the choice of a deprecated or retired Claude model is said, once, at start. */
export interface ModelChoiceLog {
  warn(message: string): void;
  error(message: string): void;
}

/**
 * Claude when ANTHROPIC_API_KEY is set; otherwise the deterministic offline planner. A Claude
 * model Anthropic has deprecated or retired is said on `log` (the service still starts: payments
 * do not depend on the agent).
 */
export function agentModelFor(config: Config, log?: ModelChoiceLog, now: Date = new Date()): AgentModel {
  const { agent } = config;
  if (!agent.anthropicApiKey) return createOfflinePlanner();
  const warning = modelLifecycleWarning(agent.model, now);
  if (warning && log) log[warning.level](warning.message);
  return lazyClaudeModel({
    apiKey: agent.anthropicApiKey,
    baseURL: agent.anthropicBaseUrl,
    model: agent.model,
    maxTurns: agent.maxSteps + 2,
    maxTokens: agent.maxTokens,
  });
}

/**
 * Claude, with the Anthropic SDK (about 250 modules, 180 ms of CPU) loaded by the first agent run
 * rather than by every start of the API host, most of which are never asked to run the agent.
 */
function lazyClaudeModel(options: ClaudeOptions): AgentModel {
  let model: Promise<AgentModel> | undefined;
  return {
    name: options.model,
    run(request) {
      if (!model) {
        const loading = import('./models/claude.ts').then(({ createClaudeModel }) => createClaudeModel(options));
        model = loading;
        // A load that failed (out of file descriptors, say) is tried again by the next run.
        loading.catch(() => {
          if (model === loading) model = undefined;
        });
      }
      return model.then((claude) => claude.run(request));
    },
  };
}
