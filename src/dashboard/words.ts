/**
 * Finance's words for the names the code uses: a tool is "Payout", not create_payout; a channel is
 * "API", not "api channel". The pages show these; filters, links and exports keep the names, which
 * are what the API takes.
 */

const TOOL_WORDS: Readonly<Record<string, string>> = {
  create_payment: 'New payment',
  get_payment: 'Payment looked up',
  list_payments: 'Payments listed',
  get_balance: 'Balance checked',
  get_revenue: 'Revenue report',
  create_payout: 'Payout',
  get_payout: 'Payout looked up',
  list_payouts: 'Payouts listed',
  refund_payment: 'Refund',
  list_refunds: 'Refunds listed',
  split_revenue: 'Revenue split',
  list_revenue_shares: 'Revenue splits listed',
  list_pending_confirmations: 'Approvals listed',
  get_confirmation: 'Approval looked up',
  start_payment_attempt: 'Payer started paying',
  record_payment_attempt: 'Payer’s payment',
  start_payment_settlements: 'Settlement started',
  confirm_settlement_batch: 'Settled on chain',
  fail_settlement_batch: 'Settlement failed',
  revert_settlement_batch: 'Settlement undone by a reorg',
  fail_queued_transfers: 'Transfers failed',
  record_refund_submission: 'Refund sent to the provider',
  record_refund_outcome: 'Refund outcome',
  expire_payments: 'Payments expired',
  fund_test_balance: 'Test funding',
  record_treasury_opening: 'Treasury opening balance',
  record_x402_authorization: 'USDC payment received for settling',
  confirm_x402_authorization: 'USDC payment landed on chain',
  fail_x402_authorization: 'USDC payment could not land',
  revert_x402_authorization: 'USDC payment undone by a reorg',
};

export function toolWords(tool: string): string {
  return TOOL_WORDS[tool] ?? tool.replaceAll('_', ' ');
}

const CHANNEL_WORDS: Readonly<Record<string, string>> = {
  api: 'API',
  agent: 'Agent',
  mcp: 'Assistant (MCP)',
  system: 'System',
};

export function channelWords(channel: string): string {
  return CHANNEL_WORDS[channel] ?? channel;
}

const DECISION_WORDS: Readonly<Record<string, string>> = {
  allow: 'Allowed',
  require_confirmation: 'Needs approval',
  deny: 'Denied',
  not_checked: 'No policy check',
};

export function decisionWords(decision: string): string {
  return DECISION_WORDS[decision] ?? decision.replaceAll('_', ' ');
}

const STATUS_WORDS: Readonly<Record<string, string>> = {
  executed: 'Done',
  held: 'Waiting for approval',
  denied: 'Denied',
  failed: 'Failed',
  rejected: 'Rejected',
  planned: 'Planned (dry run)',
  expired: 'Expired unapproved',
};

export function actionStatusWords(status: string): string {
  return STATUS_WORDS[status] ?? status.replaceAll('_', ' ');
}

/**
 * A policy reason in finance's words: the engine writes "the api channel's confirmation
 * threshold"; finance reads "the API's confirmation threshold". The stored reason is unchanged.
 */
export function reasonWords(reason: string): string {
  return reason.replace(/\bthe (api|agent|mcp) channel's\b/g, (_all, channel: string) => {
    const words = channel === 'agent' ? 'agent' : channelWords(channel);
    return `the ${words}’s`;
  });
}
