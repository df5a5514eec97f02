import type { Config } from '../config/config.ts';
import type { AgentModel } from './model.ts';
import { createClaudeModel } from './models/claude.ts';
import { createOfflinePlanner } from './models/offline-planner.ts';

/** Claude when ANTHROPIC_API_KEY is set; otherwise the deterministic offline planner. */
export function agentModelFor(config: Config): AgentModel {
  const { agent } = config;
  if (!agent.anthropicApiKey) return createOfflinePlanner();
  return createClaudeModel({
    apiKey: agent.anthropicApiKey,
    baseURL: agent.anthropicBaseUrl,
    model: agent.model,
    maxTurns: agent.maxSteps + 2,
    maxTokens: agent.maxTokens,
  });
}
