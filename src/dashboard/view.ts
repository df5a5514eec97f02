import { AppError } from '../core/errors.ts';
import { stringifyJson } from '../core/json-text.ts';
import { html, type HtmlValue, type SafeHtml } from '../checkout/html.ts';
import type { ApiKeyScope } from '../domain/api-key-secret.ts';
import { formatDisplay, SETTLEMENT_CURRENCY } from '../domain/money.ts';
import type { DashboardAssets } from './assets.ts';
import { CSRF_FIELD } from './csrf.ts';
import type { DashboardSession } from './sessions.ts';

/**
 * The dashboard's page shell and the small pieces every screen uses, all through the escaping
 * `html` tag (checkout/html.ts): nothing from the database reaches a page unescaped. No inline
 * script or style anywhere (the CSP forbids both), and attribute values are always quoted.
 */

export type Section =
  | 'overview'
  | 'runs'
  | 'actions'
  | 'confirmations'
  | 'payments'
  | 'payouts'
  | 'reconciliation'
  | 'webhooks'
  | 'developers';

export interface Screen {
  section: Section;
  path: string;
  label: string;
  /** The key needs one of these scopes to open the screen (none: any signed-in key). */
  scopes: readonly ApiKeyScope[];
  /** What the screen is for, on the overview. */
  purpose: string;
}

/** The screens, in navigation order, with the scopes that open them (the API's scopes for the same data). */
export const SCREENS: readonly Screen[] = [
  { section: 'overview', path: '/dashboard', label: 'Overview', scopes: [], purpose: 'This page.' },
  {
    section: 'runs',
    path: '/dashboard/runs',
    label: 'Agent runs',
    scopes: ['agent'],
    purpose: 'Agent instructions, their steps, decisions and results.',
  },
  {
    section: 'actions',
    path: '/dashboard/actions',
    label: 'Actions',
    scopes: ['agent'],
    purpose: 'Every recorded tool call, filtered, with CSV export.',
  },
  {
    section: 'confirmations',
    path: '/dashboard/confirmations',
    label: 'Approvals',
    scopes: ['approvals', 'payments:read'],
    purpose: 'Actions the policy held for a human. Approving or rejecting needs the approvals scope.',
  },
  {
    section: 'payments',
    path: '/dashboard/payments',
    label: 'Payments',
    scopes: ['payments:read'],
    purpose: 'Checkout payments and their settlement.',
  },
  {
    section: 'payouts',
    path: '/dashboard/payouts',
    label: 'Payouts',
    scopes: ['payments:read'],
    purpose: 'Payouts from the balance and their transactions.',
  },
  {
    section: 'reconciliation',
    path: '/dashboard/reconciliation',
    label: 'Reconciliation',
    scopes: ['payments:read'],
    purpose:
      'Each day, what the providers collected against what was booked and settled: the differences about your payments.',
  },
  {
    section: 'webhooks',
    path: '/dashboard/webhooks',
    label: 'Webhooks',
    scopes: ['webhooks'],
    purpose: 'Events, delivery attempts, redelivery.',
  },
  {
    section: 'developers',
    path: '/dashboard/developers',
    label: 'Developers',
    scopes: ['keys', 'webhooks'],
    purpose: 'API keys (keys scope) and the webhook signing secret (webhooks scope).',
  },
];

export function screen(section: Section): Screen {
  return SCREENS.find((s) => s.section === section)!;
}

/** True when the session's key holds one of `scopes` (or `scopes` is empty). */
export function allows(session: DashboardSession, scopes: readonly string[]): boolean {
  return scopes.length === 0 || scopes.some((scope) => session.scopes.has(scope));
}

export interface PageContext {
  assets: DashboardAssets;
  session: DashboardSession | null;
}

export interface PageOptions {
  section?: Section;
  /** A narrow single-column page (sign-in, messages). */
  narrow?: boolean;
}

export function renderPage(ctx: PageContext, title: string, body: SafeHtml, options: PageOptions = {}): string {
  const { session } = ctx;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title} · plainpay dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ctx.assets.css.path}">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<a class="brand" href="/dashboard">plainpay</a>
${session && html`<span class="mode${session.livemode ? ' live' : ''}">${session.livemode ? 'Live mode' : 'Test mode'}</span>`}
${session && navigation(session, options.section)}
${
  session &&
  html`<div class="who"><span>Signed in with <code id="signed-in-key">${session.keyLabel.redacted}</code>${
    session.keyLabel.name && html` (${session.keyLabel.name})`
  }</span>
<form class="inline" method="post" action="/dashboard/sign-out">${csrfField(session)}<button type="submit">Sign out</button></form></div>`
}
</header>
<main id="main"${options.narrow && html` class="narrow"`}>
${body}
</main>
</body>
</html>
`.value;
}

function navigation(session: DashboardSession, current: Section | undefined): SafeHtml {
  const items = SCREENS.filter((s) => allows(session, s.scopes)).map(
    (s) => html`<li><a href="${s.path}"${s.section === current && html` aria-current="page"`}>${s.label}</a></li>`,
  );
  return html`<nav class="screens" aria-label="Dashboard"><ul>${items}</ul></nav>`;
}

export function csrfField(session: DashboardSession): SafeHtml {
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${session.csrfToken}">`;
}

/** A time in UTC (the page has no script to localise it), machine-readable in datetime. */
export function time(value: Date | string | null | undefined): SafeHtml {
  if (value === null || value === undefined) return html`<span class="muted">—</span>`;
  const date = typeof value === 'string' ? new Date(value) : value;
  const iso = date.toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 19).replace('T', ' ')} UTC</time>`;
}

const GOOD = new Set(['executed', 'settled', 'completed', 'delivered', 'succeeded', 'allow', 'paid', 'active', 'yes']);
const BAD = new Set(['failed', 'denied', 'rejected', 'deny', 'expired', 'refunded']);
const WAITING = new Set(['held', 'pending', 'queued', 'require_confirmation', 'confirmation_required', 'settling']);

/** A status as a coloured badge: its tone from the status, its text the status or `label` (finance's words). */
export function badge(status: string, label?: string): SafeHtml {
  const tone = GOOD.has(status) ? ' ok' : BAD.has(status) ? ' bad' : WAITING.has(status) ? ' warn' : '';
  return html`<span class="badge${tone}">${label ?? status.replaceAll('_', ' ')}</span>`;
}

export function json(value: unknown): SafeHtml {
  return html`<pre><code>${stringifyJson(value, 2) ?? 'null'}</code></pre>`;
}

export function notice(kind: 'ok' | 'bad' | 'warn' | 'info', body: HtmlValue): SafeHtml {
  const role = kind === 'bad' ? 'alert' : 'status';
  return html`<div class="notice${kind === 'info' ? '' : ` ${kind}`}" role="${role}">${body}</div>`;
}

/** A link to an object by id, short in tables ("run_sGrNal0…"), the full id in its tooltip. */
export function idLink(href: string, id: string): SafeHtml {
  const cut = id.indexOf('_') + 7;
  return html`<a href="${href}" title="${id}"><code>${id.length > cut + 3 ? `${id.slice(0, cut)}…` : id}</code></a>`;
}

export function usdc(minor: bigint): string {
  return formatDisplay(minor, SETTLEMENT_CURRENCY);
}

export function maybe(value: HtmlValue): HtmlValue {
  return value === null || value === undefined || value === '' ? html`<span class="muted">—</span>` : value;
}

/** A path with a query string of the non-empty values. */
export function withQuery(path: string, params: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value) query.set(name, value);
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

/** The paging links of a newest-first list, keeping the filters. */
export function pager(
  path: string,
  filters: Record<string, string | undefined>,
  nextAfter: string | undefined,
): SafeHtml {
  if (!filters['starting_after'] && !nextAfter) return html``;
  return html`<p class="pager">${
    filters['starting_after'] &&
    html`<a href="${withQuery(path, { ...filters, starting_after: undefined })}">Newest</a>`
  }${nextAfter && html`<a href="${withQuery(path, { ...filters, starting_after: nextAfter })}" rel="next">Older →</a>`}</p>`;
}

export function table(headings: readonly string[], rows: readonly SafeHtml[], empty: string, id?: string): SafeHtml {
  if (rows.length === 0) return html`<p class="muted"${id && html` id="${id}"`}>${empty}</p>`;
  return html`<div class="scroll"><table${id && html` id="${id}"`}><thead><tr>${headings.map(
    (h) => html`<th scope="col">${h}</th>`,
  )}</tr></thead><tbody>${rows}</tbody></table></div>`;
}

/** A <select> of a filter form; the empty option means "any". */
export function select(
  name: string,
  label: string,
  options: readonly string[],
  current: string | undefined,
  anyLabel = 'Any',
  words: (option: string) => string = (o) => o.replaceAll('_', ' '),
): SafeHtml {
  return html`<label>${label}<select name="${name}"><option value="">${anyLabel}</option>${options.map(
    (o) => html`<option value="${o}"${o === current && html` selected`}>${words(o)}</option>`,
  )}</select></label>`;
}

/** Reads one string query/form parameter; anything else (arrays, absent, blank) is undefined. */
export function param(source: unknown, name: string): string | undefined {
  const value =
    source instanceof URLSearchParams ? source.get(name) : (source as Record<string, unknown> | undefined)?.[name];
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

/** A policy decision's reasons ({ rule, outcome, reason }[]) as a list for people. */
export function reasonsList(reasons: unknown): SafeHtml {
  if (!Array.isArray(reasons) || reasons.length === 0) return html`<span class="muted">No rules applied.</span>`;
  return html`<ul class="reasons">${reasons.map((r) => {
    const verdict = r as { rule?: unknown; outcome?: unknown; reason?: unknown };
    return html`<li>${badge(String(verdict.outcome ?? ''))} <code>${String(verdict.rule ?? '')}</code>: ${String(verdict.reason ?? '')}</li>`;
  })}</ul>`;
}

/**
 * How a key is named on a page: its id and, from labels loaded by loadKeyLabels, its redacted
 * secret and name. `compact` (tables) shows the label alone, with the id as a tooltip.
 */
export function keyRef(labels: ReadonlyMap<string, string>, keyId: string | null, compact = false): SafeHtml {
  if (keyId === null) return html`<span class="muted">—</span>`;
  const label = labels.get(keyId);
  if (compact && label) return html`<span class="key-ref" title="${keyId}">${label}</span>`;
  return html`<span class="key-ref" title="${keyId}"><code>${keyId}</code>${label && html` <span class="muted">${label}</span>`}</span>`;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/**
 * A date filter's day (a date input's YYYY-MM-DD, UTC) as the ISO time that starts it, or with
 * `end` the last millisecond of it; a 400 naming the field for anything else.
 */
export function dayBound(value: string | undefined, name: string, end: boolean): string | undefined {
  if (value === undefined) return undefined;
  if (!DAY.test(value) || Number.isNaN(Date.parse(value))) {
    throw new AppError('invalid_request', `The ${name} date must be a day such as 2026-11-22.`, { param: name });
  }
  return `${value}T${end ? '23:59:59.999' : '00:00:00.000'}Z`;
}

/**
 * A transaction hash in a table, clipped to its first characters by the stylesheet (class clip) so
 * the table fits a laptop's width; the whole hash is still the text (copy, find, screen readers)
 * and the tooltip.
 */
export function txHash(hash: string | null): SafeHtml {
  if (hash === null) return html`<span class="muted">—</span>`;
  return html`<code class="tx-hash clip" title="${hash}">${hash}</code>`;
}

/** An address in a table, clipped as txHash is. */
export function clippedCode(text: string): SafeHtml {
  return html`<code class="clip" title="${text}">${text}</code>`;
}
