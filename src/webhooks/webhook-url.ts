import { checkWebhookUrl, type HostLookup, resolveAndPin, type WebhookUrlRefusal } from './ssrf-guard.ts';

/** How long creation waits for DNS before accepting the URL (the connect-time check still runs). */
export const WEBHOOK_URL_DNS_TIMEOUT_MS = 2000;
/** Longer URLs are refused: they are stored on every payment and copied into every attempt. */
export const WEBHOOK_URL_MAX_LENGTH = 2048;

export type WebhookUrlVerdict = { ok: true } | { ok: false; reason: WebhookUrlRefusal | 'too_long'; message: string };

export interface ValidateWebhookUrlOptions {
  /** WEBHOOK_ALLOW_PRIVATE: lets loopback/private targets through (never metadata). */
  allowPrivate: boolean;
  /** DNS resolver (A + AAAA); the system's by default. Tests inject one. */
  lookup?: HostLookup;
  timeoutMs?: number;
}

/**
 * The registration-time check of a webhook URL (create_payment calls it before its transaction):
 * http(s) only, no credentials, no internal names, and no literal or resolved address that is
 * loopback, private, link-local, CGNAT, unique-local or a metadata endpoint.
 *
 * A name that does not resolve now (NXDOMAIN, SERVFAIL, or no answer within the timeout) is
 * ACCEPTED: the merchant may set up DNS after creating the payment, and refusing would make
 * payment creation depend on a third party's resolver. It is safe because delivery checks again
 * at connect time (resolveAndPin + pinnedLookup), so such a URL can never reach a private target.
 * Messages start with "webhook" and carry no final period; callers map a refusal to a 400 with
 * param webhook_url.
 */
export async function validateWebhookUrl(url: string, options: ValidateWebhookUrlOptions): Promise<WebhookUrlVerdict> {
  if (url.length > WEBHOOK_URL_MAX_LENGTH) {
    return {
      ok: false,
      reason: 'too_long',
      message: `webhook_url must be at most ${WEBHOOK_URL_MAX_LENGTH} characters`,
    };
  }
  const syntactic = checkWebhookUrl(url, { allowPrivate: options.allowPrivate });
  if (!syntactic.ok) return { ok: false, reason: syntactic.reason, message: asUrlMessage(syntactic.message) };

  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), options.timeoutMs ?? WEBHOOK_URL_DNS_TIMEOUT_MS);
    timer.unref();
  });
  try {
    const resolved = await Promise.race([
      resolveAndPin(syntactic.url.hostname, {
        allowPrivate: options.allowPrivate,
        ...(options.lookup ? { lookup: options.lookup } : {}),
      }),
      timeout,
    ]);
    if (resolved === 'timeout' || resolved.ok || resolved.reason === 'dns_failed') return { ok: true };
    return { ok: false, reason: resolved.reason, message: asUrlMessage(resolved.message) };
  } finally {
    clearTimeout(timer);
  }
}

/** The guard speaks of a "webhook target"/"webhook host"; the API client knows the field. */
function asUrlMessage(message: string): string {
  return message.replace(/^webhook (target|host) /, 'webhook_url host ');
}
