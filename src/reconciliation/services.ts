import type { SecretBox } from '../core/secret-box.ts';
import type { ToolEnvironment } from '../core/tool.ts';

/**
 * What the reconciliation uses: the tools' environment, which is what the settlement side it reads
 * the chain through is given (the chain session, the treasury check in settlement/invariants.ts),
 * and holds the database, the clock, a logger for its alert, the operator token (config) of its
 * routes, and what a rail's listing is given (payments/deps.ts RailServices); and the secret box
 * that opens a collection account's credentials. The worker, the CLI and the API host hand in
 * their Runtime, which is one.
 */
export interface ReconciliationServices extends ToolEnvironment {
  secretBox: SecretBox;
}
