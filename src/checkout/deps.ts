import type { Notifications } from '../db/notifications.ts';
import type { PaymentRailDeps } from '../payments/deps.ts';

/**
 * What the checkout host is given (buildCheckoutApp), not the runtime: what the payer rails use
 * (it begins and checks their attempts, runs the sandbox's and USDC's system tools), and the
 * notifications that wake a session's live status stream. A Runtime has all of it.
 */
export interface CheckoutDeps extends PaymentRailDeps {
  notifications: Notifications;
}
