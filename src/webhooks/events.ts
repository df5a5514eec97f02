// The event envelope: what a receiver gets in the body of every delivery, and what
// GET /v1/events shows. The seed asks for { type, data }; we add the id to dedupe on (the same
// value as the webhook-id header, stable across retries), when it happened, and the mode.

import { parseStoredJson, stringifyJson } from '../core/json-text.ts';
import type { EventRow } from '../db/database.ts';
import type { EventDeliveryRow, WebhookAttemptRow } from '../db/repositories/webhook-deliveries.ts';
import type { EventType } from './event-types.ts';

export interface EventEnvelope {
  id: string;
  type: EventType;
  /** ISO 8601, when the event was written (the state change), not when it was sent. */
  created: string;
  livemode: boolean;
  data: unknown;
}

export interface EventSource {
  id: string;
  type: EventType;
  createdAt: Date;
  livemode: boolean;
  /** The stored json text of the event's data. */
  dataText: string;
}

export function eventEnvelope(source: EventSource): EventEnvelope {
  return {
    id: source.id,
    type: source.type,
    created: source.createdAt.toISOString(),
    livemode: source.livemode,
    data: parseStoredJson(source.dataText),
  };
}

/**
 * The delivery body. It is serialised here, once per attempt, and the worker signs and sends
 * these exact bytes: re-serialising after signing (or a receiver verifying re-serialised JSON)
 * is how signatures break. The stored data is json text kept as written, and parseJson then
 * stringifyJson reproduces it (core/json-text.ts), so every attempt of an event carries the same
 * bytes and a caller's metadata arrives exactly as they sent it.
 */
export function serializeEventBody(source: EventSource): string {
  return stringifyJson(eventEnvelope(source));
}

export function presentDelivery(delivery: EventDeliveryRow | undefined) {
  return delivery ? deliveryState(delivery) : null;
}

function deliveryState(delivery: EventDeliveryRow) {
  return {
    status: delivery.status,
    attempts: delivery.attempt_count,
    next_attempt_at: delivery.status === 'pending' ? delivery.next_attempt_at.toISOString() : null,
    last_attempt_at: delivery.last_attempt_at?.toISOString() ?? null,
    delivered_at: delivery.delivered_at?.toISOString() ?? null,
    failed_at: delivery.failed_at?.toISOString() ?? null,
  };
}

/** An event for its owner: the envelope, where it goes, and how its delivery to each target stands. */
export function presentEvent(event: EventRow, deliveries: readonly EventDeliveryRow[]) {
  return {
    id: event.id,
    object: 'event' as const,
    type: event.type,
    created: event.created_at.toISOString(),
    livemode: event.livemode,
    data: event.data,
    object_id: event.object_id,
    /** null: the object has no webhook URL of its own. */
    webhook_url: event.webhook_url,
    /** The delivery to webhook_url. */
    delivery: presentDelivery(deliveries.find((d) => d.endpoint_id === null)),
    endpoint_deliveries: deliveries.flatMap((d) =>
      d.endpoint_id === null ? [] : [{ endpoint_id: d.endpoint_id, ...deliveryState(d) }],
    ),
  };
}

export type AttemptStatus = 'succeeded' | 'failed' | 'in_progress' | 'interrupted';

/** One POST of an event. An attempt without outcome whose lease is gone was cut short by a crash. */
export function presentAttempt(attempt: WebhookAttemptRow, deliveries: readonly EventDeliveryRow[], now: Date) {
  const delivery = deliveries.find((d) => d.id === attempt.delivery_id);
  let status: AttemptStatus;
  if (attempt.outcome !== null) status = attempt.outcome;
  else if (delivery?.leased_attempt_id === attempt.id && delivery.next_attempt_at > now) status = 'in_progress';
  else status = 'interrupted';
  return {
    id: attempt.id,
    object: 'webhook_attempt' as const,
    event_id: attempt.event_id,
    attempt: attempt.attempt_number,
    trigger: attempt.trigger,
    /** The account endpoint it went to; null: the event's webhook_url. */
    endpoint_id: delivery?.endpoint_id ?? null,
    url: attempt.url,
    status,
    created: attempt.started_at.toISOString(),
    finished_at: attempt.finished_at?.toISOString() ?? null,
    finished: attempt.finished_at?.toISOString() ?? null,
    response_status: attempt.response_status,
    latency_ms: attempt.latency_ms,
    response_excerpt: attempt.response_excerpt,
    error: attempt.error_code === null ? null : { code: attempt.error_code, message: attempt.error_message },
  };
}
