import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { stringifyJson } from '../core/json-text.ts';
import { postWebhook } from '../webhooks/deliver.ts';
import { apiGet, type FeedEvent, eventFeed } from '../webhooks/event-feed.ts';
import { decodeWebhookSecret, generateWebhookSecret, signWebhook } from '../webhooks/signer.ts';
import { type ClientCommand, type CliOutput, parseStrict, required } from './command.ts';
import { EXIT, UsageError } from './failures.ts';

const DEFAULT_API_URL = 'http://localhost:3000';
const POLL_MS = 1000;

interface ListenOptions {
  apiUrl: string;
  forwardTo: string;
  /** Only these event types; all when undefined. */
  types: ReadonlySet<string> | undefined;
}

/**
 * `plainpay listen --forward-to URL`: like `stripe listen`. It reads the account's new events
 * through the API with the merchant's key (PLAINPAY_API_KEY) and POSTs each one, signed as real
 * deliveries are (Standard Webhooks, with a secret it prints at start), to a receiver on this
 * machine. This process delivers, not the server: the receiver need not be reachable from the
 * server, and the server's WEBHOOK_ALLOW_PRIVATE stays off. docs/webhooks.md, "Local development".
 */
export const listen: ClientCommand = {
  kind: 'client',
  help: `Options:
  --forward-to URL   Where to POST each event, e.g. http://localhost:4242/webhooks (required).
  --api-url URL      The plainpay API host to read events from (default: ${DEFAULT_API_URL}).
  --events TYPES     Only these event types, comma-separated (e.g. payment.paid,payment.settled).

The API key comes from PLAINPAY_API_KEY (a key with the webhooks scope); its mode (test or
live) decides whose events are forwarded. Each event written after the start is POSTed once, with
the headers webhook-id, webhook-timestamp and webhook-signature, signed with the secret printed at
start, or with PLAINPAY_LISTEN_SECRET (whsec_…) when set (then not printed), so a receiver can keep
one secret. --api-url may be plain http only to localhost: elsewhere the key needs https.
  PLAINPAY_API_KEY=sk_test_... plainpay listen --forward-to http://localhost:4242/webhooks
A delivery that fails is printed and not retried (POST /v1/events/:id/redeliver sends an event
again to its real targets). Ctrl-C stops it.`,
  parse(args) {
    const { values } = parseStrict(() =>
      parseArgs({
        args,
        options: {
          'forward-to': { type: 'string' },
          'api-url': { type: 'string' },
          events: { type: 'string' },
        },
      }),
    );
    const forwardTo = httpUrl(
      required(values['forward-to'], 'forward-to', 'plainpay listen --forward-to http://localhost:4242/webhooks'),
      'forward-to',
    );
    const apiUrl = keySafeApiUrl(httpUrl(values['api-url'] ?? DEFAULT_API_URL, 'api-url')).replace(/\/+$/, '');
    const types = values.events === undefined ? undefined : eventTypes(values.events);
    return (env, out) => listenAndForward({ apiUrl, forwardTo, types }, env, out);
  },
};

async function listenAndForward(options: ListenOptions, env: NodeJS.ProcessEnv, out: CliOutput): Promise<number> {
  const apiKey = env.PLAINPAY_API_KEY?.trim();
  if (!apiKey) {
    throw new UsageError('PLAINPAY_API_KEY is not set: put the API key in the environment of this command.', {
      param: 'PLAINPAY_API_KEY',
    });
  }
  const { secret, generated } = signingSecret(env.PLAINPAY_LISTEN_SECRET);
  const account = (await apiGet({ apiUrl: options.apiUrl, apiKey }, '/v1/ping')) as { account: string; live: boolean };
  const feed = eventFeed({ apiUrl: options.apiUrl, apiKey });
  // Refuses a key without the webhooks scope now, rather than at the first poll.
  await feed.skipExisting();
  out.stdout(
    `Ready! Forwarding ${account.live ? 'live' : 'test'}-mode events of ${account.account} to ${options.forwardTo}`,
  );
  // A secret given in the environment may be a real receiver's: never echoed (terminals and CI logs
  // keep what is printed). Only one listen made itself, worth nothing elsewhere, is shown.
  out.stdout(
    generated
      ? `Your webhook signing secret is ${secret} (Ctrl-C to stop)`
      : 'Signing with the secret from PLAINPAY_LISTEN_SECRET (Ctrl-C to stop)',
  );

  const stop = stopSignal();
  let unreachable = false;
  while (!stop.requested) {
    try {
      for (const event of await feed.poll()) {
        if (stop.requested) break;
        if (options.types && !options.types.has(event.type)) continue;
        await forward(event, options.forwardTo, secret, out);
      }
      if (unreachable) out.stderr(`plainpay at ${options.apiUrl} answers again.`);
      unreachable = false;
    } catch (error) {
      // A server restarting is not the end of a development session: said once, then retried.
      if (!unreachable) out.stderr(`${(error as Error).message} Retrying every ${POLL_MS / 1000} s…`);
      unreachable = true;
    }
    await stop.sleep(POLL_MS);
  }
  stop.dispose();
  out.stdout('stopped');
  return EXIT.ok;
}

/** POSTs one event, signed as the delivery worker signs it, and prints what the receiver said. */
async function forward(event: FeedEvent, url: string, secret: string, out: CliOutput): Promise<void> {
  const { id, type, created, livemode, data } = event;
  // The envelope of a real delivery (webhooks/events.ts), from the list's fields in its order.
  const body = stringifyJson({ id, type, created, livemode, data });
  const headers = signWebhook({ id, timestamp: Math.floor(Date.now() / 1000), body, secrets: [secret] });
  out.stdout(`${clock()}  --> ${type} [${id}]`);
  // The receiver is on this machine, usually on loopback: this process may reach it.
  const result = await postWebhook({ url, body, headers, allowPrivate: true });
  const answer = result.status === null ? result.errorCode : String(result.status);
  const failure = result.ok || result.errorMessage === null ? '' : `: ${result.errorMessage}`;
  out.stdout(`${clock()}  <-- [${answer}] POST ${url} [${id}] ${result.latencyMs} ms${failure}`);
}

function clock(): string {
  return new Date().toISOString().slice(11, 19);
}

function signingSecret(given: string | undefined): { secret: string; generated: boolean } {
  if (given === undefined || given.trim() === '') return { secret: generateWebhookSecret(), generated: true };
  try {
    decodeWebhookSecret(given.trim());
  } catch (error) {
    throw new UsageError(`PLAINPAY_LISTEN_SECRET is not a webhook secret: ${(error as Error).message}.`, {
      param: 'PLAINPAY_LISTEN_SECRET',
    });
  }
  return { secret: given.trim(), generated: false };
}

/**
 * The API URL, refused when plain http would carry the API key off this machine in cleartext:
 * http only to a loopback host (localhost, 127.0.0.0/8, ::1), https anywhere.
 */
function keySafeApiUrl(href: string): string {
  const url = new URL(href);
  if (url.protocol === 'https:' || isLoopback(url.hostname)) return href;
  throw new UsageError(
    `--api-url ${url.origin} is plain http to another machine: the API key would cross the network in cleartext. Use https://${url.host}, or http only to localhost.`,
    { param: 'api-url' },
  );
}

function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1';
  return false;
}

function httpUrl(text: string, option: string): string {
  try {
    const url = new URL(text);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url.href;
  } catch {
    // reported below, as for any other scheme
  }
  throw new UsageError(`--${option} must be an http(s) URL, e.g. http://localhost:4242/webhooks.`, { param: option });
}

function eventTypes(text: string): ReadonlySet<string> {
  const types = text
    .split(',')
    .map((type) => type.trim())
    .filter((type) => type !== '');
  if (types.length === 0) throw new UsageError('--events needs at least one event type.', { param: 'events' });
  return new Set(types);
}

/** Ctrl-C or SIGTERM: the event being forwarded finishes, then the command ends. */
function stopSignal(): { readonly requested: boolean; sleep(ms: number): Promise<void>; dispose(): void } {
  let requested = false;
  let wake: (() => void) | undefined;
  const onSignal = (): void => {
    requested = true;
    wake?.();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    get requested() {
      return requested;
    },
    sleep(ms) {
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    },
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
