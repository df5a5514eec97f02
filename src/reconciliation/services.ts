import type { PaymentRailDeps } from '../payments/deps.ts';

/**
 * What the reconciliation uses is what the payer rails' flow is given (payments/deps.ts): the
 * tools' environment, which the settlement side it reads the chain through takes (the chain
 * session, the treasury check in settlement/invariants.ts) and which holds the database, the
 * clock, a logger for its alert and the operator token (config) of its routes; and the secret box
 * that opens a collection account's credentials for a provider's listing. The worker, the CLI and
 * the API host hand in their Runtime, which is one.
 */
export type ReconciliationServices = PaymentRailDeps;
