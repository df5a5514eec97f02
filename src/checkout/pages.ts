import type { CheckoutAssets } from './assets.ts';
import { html, type SafeHtml } from './html.ts';
import { type CheckoutView, payPath } from './view.ts';

/**
 * The checkout host's pages, rendered on the server with the escaping `html` tag. Every page
 * works without JavaScript; the one script only counts down, guards double submits and follows
 * the status live. No inline script or style anywhere (the CSP forbids both).
 */

function layout(assets: CheckoutAssets, title: string, body: SafeHtml, withScript: boolean): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${assets.css.path}">
${withScript && html`<script src="${assets.js.path}" defer></script>`}
</head>
<body>
${body}
<footer>Secure checkout by plainpay</footer>
</body>
</html>
`.value;
}

export interface CheckoutPageOptions {
  /** The payer has just paid on this page (the POST's redirect named a succeeded attempt). */
  justPaid: boolean;
  /** How the payer's last attempt on this page ended, when it did not pay: said above the pay options. */
  attemptNotice?: string;
  /**
   * The form the payer sent was refused: `field` when what they typed was wrong (a mistyped email:
   * the field is marked invalid), else a provider that could not start the payment (said in the
   * form, the field left as it is).
   */
  formError?: { rail: string; message: string; field?: boolean; typed?: string };
  /** The attempt in flight, on the processing page. */
  openAttempt?: { rail: string; payerUrl: string | null; payerHint: string | null };
  /** The payer asked to pay another way, but the provider says the attempt is still open. */
  stillOpen?: boolean;
}

/** What the payer is told when an attempt ended without paying, by its outcome. */
export const ATTEMPT_NOTICES: Readonly<Record<string, string>> = {
  declined: 'The payment was declined. No money was taken. You can try again.',
  cancelled: 'The M-Pesa request was cancelled on your phone. No money was taken. You can try again.',
  timed_out: 'The M-Pesa request was not answered in time. No money was taken. You can try again.',
  abandoned: 'The payment was not completed. No money was taken. You can try again.',
  failed: 'The payment could not be started. No money was taken. Please try again.',
  flagged:
    'We could not confirm this payment. If money left your account, contact the merchant with the reference shown here.',
};

export function checkoutPage(assets: CheckoutAssets, view: CheckoutView, options: CheckoutPageOptions): string {
  const open = view.state === 'payable' || view.state === 'unavailable';
  const title = open
    ? `Pay ${view.amount} to ${view.merchantName}`
    : `${HEADINGS[view.state](options.justPaid)} · ${view.merchantName}`;
  const body = html`<main id="checkout" data-state="${view.state}" data-status-url="${payPath(view.id)}/status"${
    options.justPaid && html` data-auto-return="1"`
  }>
${!view.livemode && html`<p class="badge">Test mode: no real money moves</p>`}
<p class="merchant">${open ? 'Pay' : 'Payment to'} <strong id="merchant-name">${view.merchantName}</strong></p>
<h1 class="amount"><span class="sr-only">Amount: </span><span id="amount">${view.amount}</span> <abbr class="code" title="${view.currencyName}">${view.currencyCode}</abbr></h1>
${view.description && html`<p class="desc" id="description">${view.description}</p>`}
${stateSection(view, options)}
</main>`;
  return layout(assets, title, body, true);
}

const HEADINGS: Record<CheckoutView['state'], (justPaid: boolean) => string> = {
  payable: () => 'Choose how to pay',
  unavailable: () => 'This payment method is not available yet',
  processing: () => 'Payment in progress',
  confirming: () => 'Confirming your payment',
  received: (justPaid) => (justPaid ? 'Payment received' : 'This payment has already been paid'),
  settled: (justPaid) => (justPaid ? 'Payment complete' : 'This payment has already been paid'),
  refunded: () => 'This payment was refunded',
  expired: () => 'This checkout session has expired',
};

/**
 * On a payable page, `<form id="usdc" hidden>` is where "Pay with USDC" goes: checkout-usdc.js fills
 * and shows it when the browser has a wallet and the session offers USDC. Empty and hidden
 * otherwise, it costs a payer without a wallet a few bytes and nothing to press.
 */
function stateSection(view: CheckoutView, options: CheckoutPageOptions): SafeHtml {
  const heading = html`<h2 id="state-heading">${HEADINGS[view.state](options.justPaid)}</h2>`;
  const status = (text: string) => html`<p id="status" role="status" aria-live="polite">${text}</p>`;
  const back = (text: string) =>
    html`<a id="return" class="button primary" href="${view.returnUrl ?? '#'}"${!view.returnUrl && html` hidden`}>${text}</a>`;
  const settlement = html`<dl id="settlement" class="tx"${view.txHash === null && html` hidden`}>
<dt>Settlement transaction</dt>
<dd><code id="tx-hash">${view.txHash}</code></dd>
</dl>`;

  switch (view.state) {
    case 'payable':
      return html`${timeLeft(view)}
${options.attemptNotice && html`<p class="notice bad" role="alert">${options.attemptNotice}</p>`}
${
  // A refusal of a rail no longer offered (Paystack does not take this currency here): said above the others.
  options.formError &&
  !(view.rails as readonly string[]).includes(options.formError.rail) &&
  html`<p class="notice bad" role="alert">${options.formError.message}</p>`
}
${view.rails.map((rail) => railForm(view, rail, options.formError))}
<form id="usdc" hidden></form>
${
  view.sandbox &&
  html`<form id="pay-form" class="pay-form" method="post" action="${payPath(view.id)}">
<fieldset>
<legend>Sandbox payment</legend>
<p class="hint" id="sandbox-hint">This is a test-mode checkout. Choose what the sandbox payment rail answers.</p>
<button type="submit" class="primary" name="outcome" value="succeeded" aria-describedby="sandbox-hint">Pay ${view.amount}</button>
<button type="submit" name="outcome" value="declined" aria-describedby="sandbox-hint">Simulate a declined payment</button>
</fieldset>
</form>`
}
${status('Waiting for payment.')}`;
    case 'unavailable':
      return html`${heading}
${timeLeft(view)}
<p class="notice">Live payments cannot be made on this checkout yet. You have not been charged. Please contact ${view.merchantName} to pay another way.</p>
${status('No payment method is available.')}`;
    case 'processing':
      return processingSection(view, options);
    case 'confirming':
      return confirmingSection(view, options);
    case 'received':
      return html`${heading}
<p class="notice ok">${view.merchantName} has received your payment.</p>
${status(options.justPaid ? 'Payment received. Settling…' : 'Payment received. Settlement is in progress.')}
${receipt(view)}
${settlement}
${back(`Return to ${view.merchantName}`)}`;
    case 'settled':
      return html`${heading}
<p class="notice ok">${options.justPaid ? 'Your payment is complete and has been settled.' : 'Nothing more to pay: this payment is complete and settled.'}</p>
${status('Payment complete.')}
${receipt(view)}
${settlement}
${back(`Return to ${view.merchantName}`)}`;
    case 'refunded':
      return html`${heading}
<p class="notice">This payment was made and has since been refunded, in full or in part. There is nothing to pay.</p>
${status('Refunded.')}
${receipt(view)}
${back(`Return to ${view.merchantName}`)}`;
    case 'expired':
      return html`${heading}
<p class="notice bad">The time to pay has run out. No payment was taken. Go back to ${view.merchantName} to start again.</p>
${status('Expired.')}
${back(`Return to ${view.merchantName}`)}`;
  }
}

/**
 * The payer's receipt of a paid payment: who was paid, how much, when, and the references to quote
 * to the merchant (theirs, if they gave one, and the payment's id). Times are UTC: the page has no
 * script to put them in the payer's zone.
 */
function receipt(view: CheckoutView): SafeHtml {
  const paid = view.paidAt;
  return html`<section class="receipt" id="receipt" aria-labelledby="receipt-heading">
<h2 id="receipt-heading">Receipt</h2>
<dl>
<dt>Paid to</dt><dd>${view.merchantName}</dd>
<dt>Amount</dt><dd>${view.amount} ${view.currencyCode}</dd>
${paid && html`<dt>Paid on</dt><dd><time datetime="${paid.toISOString()}">${receiptTime(paid)}</time></dd>`}
${view.reference && html`<dt>Reference</dt><dd><code id="receipt-reference">${view.reference}</code></dd>`}
<dt>Payment ID</dt><dd><code id="receipt-payment">${view.id}</code></dd>
</dl>
<p class="hint">Quote ${view.reference ? 'the reference' : 'the payment ID'} to ${view.merchantName} if you need help with this payment.</p>
</section>`;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** "29 Nov 2026, 07:10 UTC": the same on every machine, whatever its locale data. */
export function receiptTime(at: Date): string {
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${at.getUTCDate()} ${MONTHS[at.getUTCMonth()]} ${at.getUTCFullYear()}, ${pad(at.getUTCHours())}:${pad(at.getUTCMinutes())} UTC`;
}

/** One provider rail's form: the one field the provider needs, and the button. */
function railForm(view: CheckoutView, rail: string, formError: CheckoutPageOptions['formError']): SafeHtml {
  const error = formError?.rail === rail ? formError.message : undefined;
  const errorId = `${rail}-error`;
  const invalid = error !== undefined && formError?.field === true;
  const typed = formError?.rail === rail ? formError.typed : undefined;
  const marks = html`${typed && html` value="${typed}"`}${invalid && html` aria-invalid="true" aria-describedby="${errorId}"`}`;
  const field =
    rail === 'paystack'
      ? html`<label for="email">Email for your receipt</label>
<input id="email" name="email" type="email" autocomplete="email" inputmode="email" maxlength="254" required${marks}>`
      : html`<label for="phone">M-Pesa phone number</label>
<input id="phone" name="phone" type="tel" autocomplete="tel" inputmode="tel" placeholder="0712 345 678" maxlength="20" required${marks}>`;
  const legend = rail === 'paystack' ? 'Card, bank transfer, USSD or mobile money' : 'M-Pesa';
  const button = rail === 'paystack' ? `Pay ${view.amount} with Paystack` : `Pay ${view.amount} with M-Pesa`;
  return html`<form id="${rail}-form" class="pay-form" method="post" action="${payPath(view.id)}">
<input type="hidden" name="rail" value="${rail}">
<fieldset>
<legend>${legend}</legend>
${error && html`<p class="notice${invalid ? ' bad' : ''}" id="${errorId}" role="alert">${error}</p>`}
${field}
<button type="submit" class="primary">${button}</button>
</fieldset>
</form>`;
}

/** An attempt in flight: M-Pesa waits for the PIN on the phone, Paystack for its confirmation. */
function processingSection(view: CheckoutView, options: CheckoutPageOptions): SafeHtml {
  const attempt = options.openAttempt;
  const status = (text: string) => html`<p id="status" role="status" aria-live="polite">${text}</p>`;
  const another = html`${
    options.stillOpen &&
    html`<p class="notice" role="alert">${
      attempt?.rail === 'mpesa'
        ? 'Your phone has not answered yet. Cancel the request on your phone, or let it time out (about a minute); then you can pay another way.'
        : 'Paystack is still processing this payment. If you did not finish paying there, try again in a minute.'
    }</p>`
  }
<form class="another" method="post" action="${payPath(view.id)}/abandon">
<button type="submit">Pay another way</button>
</form>`;
  if (attempt?.rail === 'mpesa') {
    return html`<h2 id="state-heading">Check your phone</h2>
<p class="notice">Enter your M-Pesa PIN on the phone ${attempt.payerHint ?? ''} to pay ${view.amount} to ${view.merchantName}. This page updates by itself.</p>
${status('Waiting for you to confirm on your phone…')}
${another}`;
  }
  if (attempt?.rail === 'paystack') {
    return html`<h2 id="state-heading">Payment in progress</h2>
<p class="notice">We are waiting for Paystack to confirm your payment. This page updates by itself.</p>
${attempt.payerUrl && html`<a class="button primary" id="continue" href="${attempt.payerUrl}">Continue on Paystack</a>`}
${status('Your payment is being confirmed. Please keep this page open.')}
${another}`;
  }
  return html`<h2 id="state-heading">Payment in progress</h2>
${status('Your payment is being confirmed. Please keep this page open.')}`;
}

/**
 * An attempt in flight whose provider answer is unknown: the provider may have acted (an M-Pesa
 * prompt may be on the phone, and may still be paid), so no second try is offered until it
 * answers; the page updates by itself when it does (docs/rails.md, "Unknown answers").
 */
function confirmingSection(view: CheckoutView, options: CheckoutPageOptions): SafeHtml {
  const attempt = options.openAttempt;
  const status = (text: string) => html`<p id="status" role="status" aria-live="polite">${text}</p>`;
  if (attempt?.rail === 'mpesa') {
    return html`<h2 id="state-heading">Confirming your M-Pesa payment</h2>
<p class="notice">We are waiting for M-Pesa to tell us whether your payment of ${view.amount} to ${view.merchantName} went through. If a request reaches the phone ${attempt.payerHint ?? ''}, you can still enter your PIN: the payment will be counted once.</p>
<p class="notice">Please do not pay again while we wait. This page updates by itself as soon as M-Pesa answers.</p>
${status('Confirming with M-Pesa…')}`;
  }
  return html`<h2 id="state-heading">Confirming your payment</h2>
<p class="notice">We are waiting for the payment provider to tell us whether your payment went through. Please do not pay again while we wait. This page updates by itself.</p>
${status('Confirming your payment…')}`;
}

function timeLeft(view: CheckoutView): SafeHtml {
  return html`<dl class="meta"><dt>Time left</dt><dd><span id="time-left" data-seconds="${view.secondsLeft}">${formatSecondsLeft(view.secondsLeft)}</span></dd></dl>`;
}

/** Same format as the script's countdown: "59:07" under an hour, "23 h 05 min" above. */
export function formatSecondsLeft(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const pad = (n: number): string => String(n).padStart(2, '0');
  return h > 0 ? `${h} h ${pad(m)} min` : `${m}:${pad(seconds % 60)}`;
}

export interface MessagePage {
  title: string;
  heading: string;
  text: string;
}

/** Honest error pages: unknown session, refused form post, server trouble. */
export function messagePage(assets: CheckoutAssets, page: MessagePage): string {
  return layout(
    assets,
    page.title,
    html`<main>
<h1>${page.heading}</h1>
<p>${page.text}</p>
</main>`,
    false,
  );
}
