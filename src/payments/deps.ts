import type { Config } from '../config/config.ts';
import type { Clock } from '../core/clock.ts';
import type { Logger } from '../core/logger.ts';
import type { SecretBox } from '../core/secret-box.ts';
import type { ToolEnvironment } from '../core/tool.ts';

// What the payer rails are given, as tools are given their context (src/core/tool.ts): not the
// runtime. A Runtime has all of it, so the composition roots (src/workers.ts, the hosts, tests)
// hand theirs in unchanged.

/**
 * What a rail's adapter uses for a provider call: the provider URLs and the timeout (config.rails),
 * the clock (Daraja's timestamps, Paystack's listing windows) and a logger. The object itself is
 * the instance M-Pesa keeps its tokens for (mpesa.ts): the flow hands down the one it was given.
 */
export interface RailServices {
  config: Config;
  clock: Clock;
  logger: Logger;
}

/**
 * What the rails' flow uses (attempts.ts, reconcile.ts, refunds.ts): the tools' environment, since
 * every outcome is a system tool's run, and the secret box that opens a collection account's
 * credentials for a provider call.
 */
export interface PaymentRailDeps extends ToolEnvironment {
  secretBox: SecretBox;
}
