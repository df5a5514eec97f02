// The service's Prometheus metrics: their names and meanings (docs/operations.md, "Metrics"), the
// registry an API app serves at GET /metrics (plugin.ts), and the reads that fill the gauges at
// scrape time. Never prom-client's global registry: tests build several apps in one process, and a
// name registered twice in one registry throws.

import { performance } from 'node:perf_hooks';
import { type Kysely, sql, type Transaction } from 'kysely';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { formatEther, formatUnits } from 'viem';
import { type ChainConnection, readTreasuryBalance, SETTLEMENT_TOKEN_DECIMALS } from '../chain/chain.ts';
import type { Clock } from '../core/clock.ts';
import type { Logger } from '../core/logger.ts';
import type { Database, PaymentRow } from '../db/database.ts';
import type { AgentRunStatus } from '../db/tables/money.ts';
import type { TransferStatus } from '../db/tables/settlement.ts';
import { countWaitingConfirmations } from '../db/repositories/confirmations.ts';
import { countRunLines, latestCompletedRun } from '../db/repositories/reconciliation-runs.ts';
import { countTransfersWaiting } from '../db/repositories/transfers.ts';
import { countPendingDeliveries } from '../db/repositories/webhook-deliveries.ts';
import { LINE_KIND_NAMES } from '../reconciliation/lines.ts';
import { DELIVERY_ERROR_CODES } from '../webhooks/deliver.ts';

/** An API's latencies, 5 ms to 10 s. */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** 2 s is the instant schedule's p95 target (docs/settlement.md): a bucket edge there keeps that quantile exact. */
const SETTLEMENT_BUCKETS = [0.5, 1, 2, 3, 5, 10, 30, 60, 300, 900, 3600, 21_600, 86_400];

export type AgentRunOutcome = Exclude<AgentRunStatus, 'running'>;
const AGENT_RUN_OUTCOMES = Object.keys({
  completed: true,
  confirmation_required: true,
  rejected: true,
  failed: true,
  needs_input: true,
  cancelled: true,
  expired: true,
} satisfies Record<AgentRunOutcome, true>);

// ---------------------------------------------------------------------------------------------------
// Per process: what happens in this process wherever it happens (a payment its settlement worker
// settled, an agent run it finished) and the Node process itself. Module-level, so that the
// settlement code and the agent record with one call and no handle; registered into every app's
// registry. A production process runs one runtime; tests that build several in one process see one
// another's counts here.

const paidToSettledSeconds = new Histogram({
  name: 'plainpay_payment_paid_to_settled_seconds',
  help: 'Time from a payment being paid (paid_at) to it being settled (settled_at), observed by the process that settled it, by livemode.',
  labelNames: ['livemode'] as const,
  buckets: SETTLEMENT_BUCKETS,
  registers: [],
});
for (const livemode of ['true', 'false']) paidToSettledSeconds.zero({ livemode });

const agentRunsTotal = new Counter({
  name: 'plainpay_agent_runs_total',
  help: 'Agent run turns (POST /agent/settle, and each answer to a run that asked back) that ended, by outcome: completed, confirmation_required, rejected, failed, needs_input (asked back), cancelled or expired.',
  labelNames: ['outcome'] as const,
  registers: [],
});
for (const outcome of AGENT_RUN_OUTCOMES) agentRunsTotal.inc({ outcome }, 0);

// Chain safety (src/settlement: reorg watch, nonce repair, chain identity, stuck batches). Set by
// the settlement worker of this process; an API-only process reports them at 0.
const chainIdentityMismatch = new Gauge({
  name: 'plainpay_chain_identity_mismatch',
  help: '1 while the node behind CHAIN_RPC_URL serves another chain (chain id or genesis hash) than the one settlement signs for: the worker refuses to sign until `plainpay chain adopt`. 0 otherwise.',
  registers: [],
});
chainIdentityMismatch.set(0);
const settlementReorgsTotal = new Counter({
  name: 'plainpay_settlement_reorgs_total',
  help: 'Confirmed settlement batches whose transaction a reorg took off the chain (or moved above the confirmation depth); each went back in flight.',
  registers: [],
});
settlementReorgsTotal.inc(0);
const nonceRepairsTotal = new Counter({
  name: 'plainpay_settlement_nonce_repairs_total',
  help: 'Nonce gaps the relayer repaired, by action: rebroadcast (its stored transaction sent again) or refill (a zero-value transfer to itself for a nonce whose batch had ended).',
  labelNames: ['action'] as const,
  registers: [],
});
for (const action of ['rebroadcast', 'refill']) nonceRepairsTotal.inc({ action }, 0);
const stuckBatches = new Gauge({
  name: 'plainpay_settlement_batches_stuck',
  help: "Sent settlement batches still unconfirmed past the stuck threshold (5 min by default), as last seen by this process's settlement worker.",
  registers: [],
});
stuckBatches.set(0);

/** The worker found its node serving another chain (true) or the expected one again (false). */
export function recordChainIdentityMismatch(mismatch: boolean): void {
  chainIdentityMismatch.set(mismatch ? 1 : 0);
}

/** A confirmed batch went back in flight after a reorg. */
export function recordSettlementReorg(): void {
  settlementReorgsTotal.inc();
}

export function recordNonceRepair(action: 'rebroadcast' | 'refill'): void {
  nonceRepairsTotal.inc({ action });
}

export function recordStuckBatches(count: number): void {
  stuckBatches.set(count);
}

// Payer rails (src/payments/rails): a provider's answer the operator must act on, such as a
// collection account Daraja says is set up wrong. Counted by the process that heard it.

/** Why a payer rail alerts the operator (docs/rails.md, "Result codes and what the payer sees"). */
export const RAIL_ALERT_REASONS = ['configuration', 'collection_limit'] as const;
export type RailAlertReason = (typeof RAIL_ALERT_REASONS)[number];

const railAlertsTotal = new Counter({
  name: 'plainpay_payer_rail_alerts_total',
  help: "Provider answers the operator must act on, by rail and reason: configuration (the collection account's credentials, shortcode, till or transaction type are wrong) or collection_limit (its paybill or till is full). Each is also logged at error level.",
  labelNames: ['rail', 'reason'] as const,
  registers: [],
});
for (const reason of RAIL_ALERT_REASONS) railAlertsTotal.inc({ rail: 'mpesa', reason }, 0);

export function recordRailAlert(rail: string, reason: RailAlertReason): void {
  railAlertsTotal.inc({ rail, reason });
}

// Payer rails (src/payments/rails): what a provider refused for good, for the operator to act on.
// Counted by the process that met it (the checkout host for a payer's start).
const railCurrencyRefusals = new Counter({
  name: 'plainpay_rail_currency_refusals_total',
  help: "Payer attempts a provider refused because the collection account's integration does not take the payment's currency, by rail; the rail is no longer offered in that currency on that collection account (the error log names both).",
  labelNames: ['rail'] as const,
  registers: [],
});
for (const rail of ['paystack', 'mpesa']) railCurrencyRefusals.inc({ rail }, 0);

/** A provider refused a currency for a collection account (src/payments/rails/attempts.ts). */
export function recordRailCurrencyRefused(rail: string): void {
  railCurrencyRefusals.inc({ rail });
}

// Counted by the payer-rails worker that read it.
const railRefundsNeedingAttention = new Counter({
  name: 'plainpay_rail_refunds_needing_attention_total',
  help: "Rail refunds the provider will not pay by itself (Paystack's needs-attention: it needs the payer's bank account), by rail, counted once as each enters that state; the refund stays pending, its amount held, until it is retried with the payer's bank account.",
  labelNames: ['rail'] as const,
  registers: [],
});
for (const rail of ['paystack', 'mpesa']) railRefundsNeedingAttention.inc({ rail }, 0);

/** A rail refund entered the provider's needs-attention (src/payments/rails/refunds.ts). */
export function recordRailRefundNeedsAttention(rail: string): void {
  railRefundsNeedingAttention.inc({ rail });
}

// Webhook deliveries (src/webhooks/delivery-worker.ts): each attempt this process's worker made.
// The outcome is `delivered` (a 2xx) or why it failed, from the closed set of delivery error codes.

/** Latency edges for calls that leave the process (a receiver, a provider): 25 ms to the 15 s timeouts. */
const OUTBOUND_BUCKETS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30];

export const WEBHOOK_DELIVERY_OUTCOMES = ['delivered', ...DELIVERY_ERROR_CODES] as const;
export type WebhookDeliveryOutcome = (typeof WEBHOOK_DELIVERY_OUTCOMES)[number];

const webhookDeliveriesTotal = new Counter({
  name: 'plainpay_webhook_deliveries_total',
  help: 'Webhook delivery attempts this process made, by outcome: delivered (the receiver answered 2xx) or why it failed: http_status (any other answer), timeout, network, redirect, dns_failed, refused_target, invalid_target, signing_failed.',
  labelNames: ['outcome'] as const,
  registers: [],
});
for (const outcome of WEBHOOK_DELIVERY_OUTCOMES) webhookDeliveriesTotal.inc({ outcome }, 0);

const webhookDeliverySeconds = new Histogram({
  name: 'plainpay_webhook_delivery_duration_seconds',
  help: "Webhook delivery attempts that were sent, from the start of the attempt (DNS included) to the receiver's response headers or the failure.",
  buckets: OUTBOUND_BUCKETS,
  registers: [],
});

/** One delivery attempt ended; `seconds` is undefined when nothing was sent (it could not be signed). */
export function recordWebhookDelivery(outcome: WebhookDeliveryOutcome, seconds: number | undefined): void {
  webhookDeliveriesTotal.inc({ outcome });
  if (seconds !== undefined) webhookDeliverySeconds.observe(seconds);
}

// Payer-rail providers (src/payments/rails/rail.ts providerCall): every HTTP call to Paystack or
// Daraja, by what it was for. Operations are a closed list per rail, so the label set stays bounded.

export const PROVIDER_OPERATIONS = {
  paystack: [
    'initialize_transaction',
    'verify_transaction',
    'list_transactions',
    'create_refund',
    'list_refunds',
    'fetch_refund',
  ],
  mpesa: ['oauth_token', 'stk_push', 'stk_query', 'pull_transactions'],
} as const;
export type ProviderOperation<R extends keyof typeof PROVIDER_OPERATIONS = keyof typeof PROVIDER_OPERATIONS> =
  (typeof PROVIDER_OPERATIONS)[R][number];

/** ok: a 2xx; http_4xx / http_5xx / http_other: the provider answered otherwise; timeout, network: no answer. */
export const PROVIDER_CALL_OUTCOMES = ['ok', 'http_4xx', 'http_5xx', 'http_other', 'timeout', 'network'] as const;
export type ProviderCallOutcome = (typeof PROVIDER_CALL_OUTCOMES)[number];

const providerCallsTotal = new Counter({
  name: 'plainpay_provider_calls_total',
  help: "HTTP calls this process made to a payer rail's provider (Paystack, M-Pesa's Daraja), by rail, operation and outcome: ok (2xx), http_4xx, http_5xx, http_other (the provider answered with that status), timeout (no answer within RAIL_TIMEOUT_MS) or network (no connection, TLS, a redirect).",
  labelNames: ['rail', 'operation', 'outcome'] as const,
  registers: [],
});
const providerCallSeconds = new Histogram({
  name: 'plainpay_provider_call_duration_seconds',
  help: "HTTP calls to a payer rail's provider, by rail and operation: seconds from the request to the whole answer read (or the failure).",
  labelNames: ['rail', 'operation'] as const,
  buckets: OUTBOUND_BUCKETS,
  registers: [],
});
for (const [rail, operations] of Object.entries(PROVIDER_OPERATIONS)) {
  for (const operation of operations) {
    providerCallSeconds.zero({ rail, operation });
    for (const outcome of PROVIDER_CALL_OUTCOMES) providerCallsTotal.inc({ rail, operation, outcome }, 0);
  }
}

export function recordProviderCall(
  rail: keyof typeof PROVIDER_OPERATIONS,
  operation: ProviderOperation,
  outcome: ProviderCallOutcome,
  seconds: number,
): void {
  providerCallsTotal.inc({ rail, operation, outcome });
  providerCallSeconds.observe({ rail, operation }, seconds);
}

// Payouts and refunds asked for (src/pipeline/execute-tool.ts, src/pipeline/approvals.ts), in the
// action log's words (docs/dashboard.md). Two counters each, so that no request is counted twice:
// *_total counts each request once, by its first outcome (a held one stays `held` there), and
// *_approvals_total counts what a human's decision on a held one then did. Executed money is
// `executed` in the first plus `executed` in the second.

export const MONEY_REQUEST_OUTCOMES = ['executed', 'held', 'denied', 'failed'] as const;
export type MoneyRequestOutcome = (typeof MONEY_REQUEST_OUTCOMES)[number];
export const MONEY_APPROVAL_OUTCOMES = ['executed', 'rejected', 'denied', 'failed'] as const;
export type MoneyApprovalOutcome = (typeof MONEY_APPROVAL_OUTCOMES)[number];

const payoutsTotal = new Counter({
  name: 'plainpay_payouts_total',
  help: 'Payout requests (create_payout, from the API, the agent or MCP), each once, by its first outcome: executed (the payout was created and queued), held (for a human to approve; what the approval did is in plainpay_payout_approvals_total), denied (by the policy) or failed (refused with an error, e.g. insufficient balance).',
  labelNames: ['outcome'] as const,
  registers: [],
});
const refundsTotal = new Counter({
  name: 'plainpay_refunds_total',
  help: 'Refund requests (refund_payment), each once, by its first outcome: executed (the refund was created), held, denied or failed, as for payouts.',
  labelNames: ['outcome'] as const,
  registers: [],
});
const payoutApprovalsTotal = new Counter({
  name: 'plainpay_payout_approvals_total',
  help: 'Decisions on held payouts, by outcome: executed (approved, and the payout was created), rejected (a human said no), denied (approved, but the policy now denies it) or failed (approved, but refused with an error; the payout stays held).',
  labelNames: ['outcome'] as const,
  registers: [],
});
const refundApprovalsTotal = new Counter({
  name: 'plainpay_refund_approvals_total',
  help: 'Decisions on held refunds, by outcome: executed, rejected, denied or failed, as for payouts.',
  labelNames: ['outcome'] as const,
  registers: [],
});
for (const outcome of MONEY_REQUEST_OUTCOMES) {
  payoutsTotal.inc({ outcome }, 0);
  refundsTotal.inc({ outcome }, 0);
}
for (const outcome of MONEY_APPROVAL_OUTCOMES) {
  payoutApprovalsTotal.inc({ outcome }, 0);
  refundApprovalsTotal.inc({ outcome }, 0);
}

/** The counters of a tool whose requests are counted, by tool name; other tools are not counted here. */
const MONEY_COUNTERS: Readonly<Record<string, { requests: Counter<'outcome'>; approvals: Counter<'outcome'> }>> = {
  create_payout: { requests: payoutsTotal, approvals: payoutApprovalsTotal },
  refund_payment: { requests: refundsTotal, approvals: refundApprovalsTotal },
};

/** The first outcome of one new request for a tool: counted when the tool is a payout or a refund. */
export function recordMoneyRequest(tool: string, outcome: MoneyRequestOutcome): void {
  MONEY_COUNTERS[tool]?.requests.inc({ outcome });
}

/** What a human's decision on a held payout or refund did (its request was counted `held`). */
export function recordMoneyApproval(tool: string, outcome: MoneyApprovalOutcome): void {
  MONEY_COUNTERS[tool]?.approvals.inc({ outcome });
}

let processRegistry: Registry | undefined;

/** Made on first use: the default metrics start an event-loop monitor and a GC observer, once. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, prefix: 'plainpay_' });
    processRegistry.registerMetric(paidToSettledSeconds);
    processRegistry.registerMetric(agentRunsTotal);
    for (const metric of [chainIdentityMismatch, settlementReorgsTotal, nonceRepairsTotal, stuckBatches]) {
      processRegistry.registerMetric(metric);
    }
    processRegistry.registerMetric(railAlertsTotal);
    processRegistry.registerMetric(railCurrencyRefusals);
    processRegistry.registerMetric(railRefundsNeedingAttention);
    processRegistry.registerMetric(webhookDeliveriesTotal);
    processRegistry.registerMetric(webhookDeliverySeconds);
    processRegistry.registerMetric(providerCallsTotal);
    processRegistry.registerMetric(providerCallSeconds);
    processRegistry.registerMetric(payoutsTotal);
    processRegistry.registerMetric(refundsTotal);
    processRegistry.registerMetric(payoutApprovalsTotal);
    processRegistry.registerMetric(refundApprovalsTotal);
    processRegistry.registerMetric(rateLimitDegraded);
    processRegistry.registerMetric(rateLimitFallbackDecisions);
    processRegistry.registerMetric(rateLimitRedisWaits);
    processRegistry.registerMetric(rateLimitProbes);
    processRegistry.registerMetric(rateLimitProbesTotal);
    processRegistry.registerMetric(auditBroken);
  }
  return processRegistry;
}

/**
 * Called where a payment becomes settled, inside the transaction that settles it: a transaction
 * that then rolls back leaves one extra observation, and the payment is observed again when it
 * does settle.
 */
export function recordPaymentSettled(payment: Pick<PaymentRow, 'livemode' | 'paid_at' | 'settled_at'>): void {
  if (!payment.paid_at || !payment.settled_at) return;
  const seconds = (payment.settled_at.getTime() - payment.paid_at.getTime()) / 1000;
  paidToSettledSeconds.observe({ livemode: String(payment.livemode) }, Math.max(0, seconds));
}

/** Called once per run, after its end is committed. */
export function recordAgentRunFinished(outcome: AgentRunOutcome): void {
  agentRunsTotal.inc({ outcome });
}

const auditBroken = new Gauge({
  name: 'plainpay_audit_broken',
  help: "1 when this worker's last verification of the action log and the money rows found a row edited, added or missing; 0 when intact.",
  registers: [],
});
auditBroken.set(0);

/** Called by the worker's audit verification after each run (src/audit/verification-job.ts). */
export function recordAuditVerification(ok: boolean): void {
  auditBroken.set(ok ? 0 : 1);
}

// Rate limiting while Redis is unreachable (src/rate-limit/redis-rate-limiter.ts): requests are counted
// in the process that receives them, each instance enforcing the limit alone.

const rateLimitDegraded = new Gauge({
  name: 'plainpay_rate_limit_degraded',
  help: 'Rate limiters of this process that count in-process because their Redis (REDIS_URL) is unreachable: 1 during an outage, 0 otherwise.',
  registers: [],
});
rateLimitDegraded.set(0);

const rateLimitFallbackDecisions = new Counter({
  name: 'plainpay_rate_limit_fallback_decisions_total',
  help: 'Requests rate-limited in-process instead of in Redis because Redis was unreachable, not yet connected or too slow.',
  registers: [],
});
rateLimitFallbackDecisions.inc(0);

const rateLimitRedisWaits = new Gauge({
  name: 'plainpay_rate_limit_redis_waits',
  help: 'Requests of this process waiting now for their count in Redis (0 throughout an outage: they are counted in-process at once).',
  registers: [],
});
rateLimitRedisWaits.set(0);

const rateLimitProbes = new Gauge({
  name: 'plainpay_rate_limit_probes_in_flight',
  help: 'Probes of an unreachable or slow Redis in flight now (at most one per rate limiter); no request waits for one.',
  registers: [],
});
rateLimitProbes.set(0);

const rateLimitProbesTotal = new Counter({
  name: 'plainpay_rate_limit_probes_total',
  help: 'Probes sent to find out whether an unreachable or slow Redis answers again.',
  registers: [],
});
rateLimitProbesTotal.inc(0);

/** Called by the Redis rate limiter: an outage starts or ends, a request is counted in-process. */
export const rateLimitFallback = {
  /** A request starts (+1) or stops (-1) waiting for its count in Redis. */
  waiting(delta: 1 | -1): void {
    rateLimitRedisWaits.inc(delta);
  },
  probeStarted(): void {
    rateLimitProbes.inc();
    rateLimitProbesTotal.inc();
  },
  probeEnded(): void {
    rateLimitProbes.dec();
  },
  started(): void {
    rateLimitDegraded.inc();
  },
  ended(): void {
    rateLimitDegraded.dec();
  },
  counted(): void {
    rateLimitFallbackDecisions.inc();
  },
};

// ---------------------------------------------------------------------------------------------------
// Per app: requests, and gauges read at scrape time from the database and the chain, which every
// process sharing the database reports alike.

export interface MetricSources {
  db: Kysely<Database>;
  clock: Clock;
  logger: Logger;
  chain(): Promise<ChainConnection>;
}

export interface CollectOptions {
  /** Longest a scrape waits for one database read; Postgres also cancels the statement then. */
  queryTimeoutMs: number;
  /** Longest a scrape waits for the chain (connecting included). */
  chainTimeoutMs: number;
  /** Balances are read from the node at most this often; scrapes in between reuse them. */
  chainCacheMs: number;
}

const DEFAULT_COLLECT_OPTIONS: CollectOptions = { queryTimeoutMs: 2_000, chainTimeoutMs: 3_000, chainCacheMs: 10_000 };

export interface ServiceMetrics {
  registry: Registry;
  /** One request: its route pattern ('unmatched' when no route matched), status and seconds taken. */
  observeRequest(method: string, route: string, statusCode: number, seconds: number): void;
}

type CollectorName = 'transfer_queue' | 'webhook_queue' | 'confirmations' | 'chain' | 'reconciliation';
const COLLECTORS: readonly CollectorName[] = [
  'transfer_queue',
  'webhook_queue',
  'confirmations',
  'chain',
  'reconciliation',
];
/** The mode label of a reconciliation line: its mode, or `both` for one of no single mode (the treasury). */
const RECONCILIATION_MODES = ['live', 'test', 'both'] as const;
const OPEN_TRANSFER_STATUSES = ['queued', 'batched', 'sent'] as const satisfies readonly TransferStatus[];

export function createServiceMetrics(sources: MetricSources, options: Partial<CollectOptions> = {}): ServiceMetrics {
  const opts = { ...DEFAULT_COLLECT_OPTIONS, ...options };
  const own = new Registry();

  const httpRequestSeconds = new Histogram({
    name: 'plainpay_http_request_duration_seconds',
    help: 'API requests by method, route pattern (unmatched: no route matched) and status code, and the seconds from arrival to response.',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: HTTP_BUCKETS,
    registers: [own],
  });

  // Filled at scrape time by the reads (scrapeReads), each gauge asking for its read when scraped.
  const gauges = scrapeGauges(own, (name) => refresh[name]());
  const refresh = scrapeReads(sources, opts, gauges);

  return {
    registry: Registry.merge([processMetrics(), own]),
    observeRequest(method, route, statusCode, seconds) {
      httpRequestSeconds.observe({ method, route, status_code: statusCode }, seconds);
    },
  };
}

/** The gauges read at scrape time, each asking `refresh` for its collector's read, and the count of reads that failed. */
function scrapeGauges(own: Registry, refresh: (name: CollectorName) => Promise<void>) {
  const transferDepth = new Gauge({
    name: 'plainpay_transfer_queue_depth',
    help: 'On-chain transfers not yet confirmed, by status: queued (waiting for a batch), batched (in a planned batch), sent (broadcast, waiting for confirmations).',
    labelNames: ['status'] as const,
    registers: [own],
    collect: () => refresh('transfer_queue'),
  });
  const transferOldest = new Gauge({
    name: 'plainpay_transfer_queue_oldest_age_seconds',
    help: 'Age of the oldest unconfirmed transfer in each status, since it was queued; 0 when there is none.',
    labelNames: ['status'] as const,
    registers: [own],
    collect: () => refresh('transfer_queue'),
  });
  const webhookDepth = new Gauge({
    name: 'plainpay_webhook_queue_depth',
    help: 'Webhook deliveries neither delivered nor given up, by state: due (may be attempted now) or waiting (backing off before a retry, or an attempt in flight).',
    labelNames: ['state'] as const,
    registers: [own],
    collect: () => refresh('webhook_queue'),
  });
  const webhookOldest = new Gauge({
    name: 'plainpay_webhook_queue_oldest_age_seconds',
    help: 'Age of the oldest pending webhook delivery, since its event was written; 0 when there is none.',
    registers: [own],
    collect: () => refresh('webhook_queue'),
  });
  const confirmationsWaiting = new Gauge({
    name: 'plainpay_confirmations_waiting',
    help: 'Actions the policy held for a human that are neither approved, rejected nor lapsed.',
    registers: [own],
    collect: () => refresh('confirmations'),
  });
  const confirmationsOldest = new Gauge({
    name: 'plainpay_confirmations_oldest_waiting_age_seconds',
    help: 'Age of the oldest held action still waiting for a human; 0 when there is none.',
    registers: [own],
    collect: () => refresh('confirmations'),
  });
  const relayerGasEther = new Gauge({
    name: 'plainpay_relayer_gas_balance_ether',
    help: 'Native balance of the relayer account that pays settlement gas, in ether (1e18 wei). Read from the node at most every few seconds.',
    registers: [own],
    collect: () => refresh('chain'),
  });
  const treasuryUsdc = new Gauge({
    name: 'plainpay_treasury_balance_usdc',
    help: 'Settlement stablecoin held by the treasury (the batch contract), in whole tokens (6 decimals). Read from the node at most every few seconds.',
    registers: [own],
    collect: () => refresh('chain'),
  });
  // The latest reconciliation (docs/reconciliation.md): read from the run it stored, so every
  // instance reports the same; it changes once a day, and with each run the operator asks for.
  const reconciliationDifferences = new Gauge({
    name: 'plainpay_reconciliation_differences',
    help: 'Differences the latest reconciliation of the latest day found, by kind and mode (live, test, or both for the treasury).',
    labelNames: ['kind', 'mode'] as const,
    registers: [own],
    collect: () => refresh('reconciliation'),
  });
  const reconciliationDay = new Gauge({
    name: 'plainpay_reconciliation_day_timestamp_seconds',
    help: 'Start (UTC midnight, Unix seconds) of the latest day reconciled; 0 before the first run.',
    registers: [own],
    collect: () => refresh('reconciliation'),
  });
  const reconciliationLastRun = new Gauge({
    name: 'plainpay_reconciliation_last_run_timestamp_seconds',
    help: 'When that reconciliation run finished (Unix seconds); 0 before the first run.',
    registers: [own],
    collect: () => refresh('reconciliation'),
  });
  const treasuryCoverRatio = new Gauge({
    name: 'plainpay_treasury_cover_ratio',
    help: 'Treasury tokens held / everything owed (custodial balances, open transfers, paid payments), at the latest reconciliation; +Inf when nothing is owed, NaN when not read.',
    registers: [own],
    collect: () => refresh('reconciliation'),
  });
  const treasuryShortfall = new Gauge({
    name: 'plainpay_treasury_shortfall_usdc',
    help: 'How much the treasury lacked of what it owes at the latest reconciliation, in whole tokens; 0 when covered, NaN when not read.',
    registers: [own],
    collect: () => refresh('reconciliation'),
  });
  const collectErrors = new Counter({
    name: 'plainpay_metrics_collect_errors_total',
    help: 'Scrape-time reads that failed or timed out, by collector; their gauges read NaN in that scrape.',
    labelNames: ['collector'] as const,
    registers: [own],
    // Waits for this scrape's reads, so that a failure shows in the scrape it happened in.
    collect: async () => {
      await Promise.all(COLLECTORS.map((name) => refresh(name)));
    },
  });
  for (const collector of COLLECTORS) collectErrors.inc({ collector }, 0);
  return {
    transferDepth,
    transferOldest,
    webhookDepth,
    webhookOldest,
    confirmationsWaiting,
    confirmationsOldest,
    relayerGasEther,
    treasuryUsdc,
    reconciliationDifferences,
    reconciliationDay,
    reconciliationLastRun,
    treasuryCoverRatio,
    treasuryShortfall,
    collectErrors,
  };
}

/**
 * The reads behind the gauges, one per collector. Each sets its gauges from what it read, or to NaN
 * when the read failed or timed out (counted in collectErrors).
 */
function scrapeReads(
  sources: MetricSources,
  opts: CollectOptions,
  gauges: ReturnType<typeof scrapeGauges>,
): Record<CollectorName, () => Promise<void>> {
  const { clock, logger } = sources;
  const {
    transferDepth,
    transferOldest,
    webhookDepth,
    webhookOldest,
    confirmationsWaiting,
    confirmationsOldest,
    relayerGasEther,
    treasuryUsdc,
    reconciliationDifferences,
    reconciliationDay,
    reconciliationLastRun,
    treasuryCoverRatio,
    treasuryShortfall,
    collectErrors,
  } = gauges;
  /**
   * One read per collector and scrape: prom-client runs every metric's collect() at once, and the
   * gauges a read fills share the read in flight. A read that fails or outlasts its timeout sets
   * its gauges to NaN (unknown, rather than a plausible 0) and is counted; the scrape still answers.
   */
  function collector<T>(
    name: CollectorName,
    timeoutMs: number,
    read: () => Promise<T>,
    /** Sets the gauges from what was read, or to NaN when given undefined (the read failed). */
    apply: (value: T | undefined) => void,
  ): () => Promise<void> {
    let running: Promise<void> | undefined;
    return () => {
      running ??= withTimeout(read(), timeoutMs, `the ${name} read`)
        .then(apply, (error: unknown) => {
          apply(undefined);
          collectErrors.inc({ collector: name });
          logger.warn({ err: error, collector: name }, 'metrics collection failed');
        })
        .finally(() => {
          running = undefined;
        });
      return running;
    };
  }

  const { queryTimeoutMs: queryMs } = opts;
  const refresh: Record<CollectorName, () => Promise<void>> = {
    transfer_queue: collector(
      'transfer_queue',
      queryMs,
      () => readTransferQueue(sources, queryMs),
      (rows) => {
        for (const status of OPEN_TRANSFER_STATUSES) {
          const row = rows?.find((r) => r.status === status);
          transferDepth.set({ status }, rows ? Number(row?.depth ?? 0) : Number.NaN);
          transferOldest.set({ status }, rows ? Number(row?.oldest_seconds ?? 0) : Number.NaN);
        }
      },
    ),
    webhook_queue: collector(
      'webhook_queue',
      queryMs,
      () => readWebhookQueue(sources, queryMs),
      (row) => {
        webhookDepth.set({ state: 'due' }, row ? Number(row.due) : Number.NaN);
        webhookDepth.set({ state: 'waiting' }, row ? Number(row.waiting) : Number.NaN);
        webhookOldest.set(row ? ageSeconds(clock.now().getTime(), row.oldest) : Number.NaN);
      },
    ),
    confirmations: collector(
      'confirmations',
      queryMs,
      () => readConfirmations(sources, queryMs),
      (row) => {
        confirmationsWaiting.set(row ? Number(row.waiting) : Number.NaN);
        confirmationsOldest.set(row ? ageSeconds(clock.now().getTime(), row.oldest) : Number.NaN);
      },
    ),
    chain: collector('chain', opts.chainTimeoutMs, cachedBalances(sources, opts.chainCacheMs), (balances) => {
      relayerGasEther.set(balances?.gasEther ?? Number.NaN);
      treasuryUsdc.set(balances?.treasuryUsdc ?? Number.NaN);
    }),
    reconciliation: collector(
      'reconciliation',
      queryMs,
      () => readReconciliation(sources, queryMs),
      (read) => {
        for (const kind of LINE_KIND_NAMES) {
          for (const mode of RECONCILIATION_MODES) {
            const found = read?.counts.find((c) => c.kind === kind && modeOf(c.livemode) === mode);
            reconciliationDifferences.set({ kind, mode }, read ? (found?.count ?? 0) : Number.NaN);
          }
        }
        const run = read?.run;
        reconciliationDay.set(read ? (run ? Date.parse(`${run.day}T00:00:00Z`) / 1000 : 0) : Number.NaN);
        reconciliationLastRun.set(read ? (run?.finished_at ? run.finished_at.getTime() / 1000 : 0) : Number.NaN);
        // A run that read the treasury has a shortfall (0 when covered) and, unless nothing was owed, a ratio.
        const treasuryRead = run?.treasury_shortfall_minor !== null && run?.treasury_shortfall_minor !== undefined;
        treasuryCoverRatio.set(treasuryRead ? (run.treasury_cover_ratio ?? Number.POSITIVE_INFINITY) : Number.NaN);
        treasuryShortfall.set(
          treasuryRead ? Number(formatUnits(run.treasury_shortfall_minor!, SETTLEMENT_TOKEN_DECIMALS)) : Number.NaN,
        );
      },
    ),
  };
  return refresh;
}

// The scrape-time reads. Each walks a partial index of the open rows (migrations 003 and 004) or a
// small set (confirmations waiting for a human), so its cost follows the backlog, not the history.

/** Runs `read` in a transaction whose statements Postgres cancels after `timeoutMs`. */
function boundedRead<T>(
  db: Kysely<Database>,
  timeoutMs: number,
  read: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await sql`select set_config('statement_timeout', ${String(timeoutMs)}, true)`.execute(trx);
    return read(trx);
  });
}

function readTransferQueue({ db }: MetricSources, timeoutMs: number) {
  return boundedRead(db, timeoutMs, (trx) =>
    // Transfers are stamped by the database's clock, so their age is taken on it too; deliveries and
    // confirmations below carry the runtime's clock.
    countTransfersWaiting(trx, OPEN_TRANSFER_STATUSES),
  );
}

function readWebhookQueue({ db, clock }: MetricSources, timeoutMs: number) {
  const now = clock.now();
  return boundedRead(db, timeoutMs, (trx) => countPendingDeliveries(trx, now));
}

function readConfirmations({ db, clock }: MetricSources, timeoutMs: number) {
  const now = clock.now();
  return boundedRead(db, timeoutMs, (trx) => countWaitingConfirmations(trx, now));
}

/** The latest completed reconciliation run of the latest day, and its lines by kind and mode. */
async function readReconciliation({ db }: MetricSources, timeoutMs: number) {
  return boundedRead(db, timeoutMs, async (trx) => {
    const run = await latestCompletedRun(trx);
    return { run, counts: run ? await countRunLines(trx, run.id) : [] };
  });
}

function modeOf(livemode: boolean | null): (typeof RECONCILIATION_MODES)[number] {
  return livemode === null ? 'both' : livemode ? 'live' : 'test';
}

interface Balances {
  /** performance.now() of the read. */
  readAt: number;
  gasEther: number;
  treasuryUsdc: number;
}

/** Reads the relayer's gas and the treasury from the node, reusing a read younger than `cacheMs`. */
function cachedBalances({ chain }: MetricSources, cacheMs: number): () => Promise<Balances> {
  let last: Balances | undefined;
  return async () => {
    if (last && performance.now() - last.readAt < cacheMs) return last;
    const conn = await chain();
    const [gasWei, treasury] = await Promise.all([
      conn.publicClient.getBalance({ address: conn.relayer.address }),
      readTreasuryBalance(conn),
    ]);
    last = {
      readAt: performance.now(),
      gasEther: Number(formatEther(gasWei)),
      treasuryUsdc: Number(formatUnits(treasury, conn.tokenDecimals)),
    };
    return last;
  };
}

/** Seconds since `oldest` (0 when there is none; never negative when another instance's clock runs ahead). */
function ageSeconds(nowMs: number, oldest: Date | null | undefined): number {
  return oldest ? Math.max(0, (nowMs - oldest.getTime()) / 1000) : 0;
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
