import type { z } from 'zod';
import { AppError } from './errors.ts';

/**
 * Parses untrusted input with a zod schema and turns the first problem into an
 * invalid_request error that names the field (param) and the rule it broke.
 */
export function parseInput<S extends z.ZodType>(
  schema: S,
  raw: unknown,
  options: { paramPrefix?: string } = {},
): z.output<S> {
  // reportInput keeps issue.input, which tells a missing field from one of the wrong type.
  const result = schema.safeParse(raw === undefined ? {} : raw, { reportInput: true });
  if (result.success) return result.data;
  throw zodIssueToAppError(result.error.issues[0]!, options.paramPrefix);
}

export function zodIssueToAppError(issue: z.core.$ZodIssue, paramPrefix?: string): AppError {
  const path = [...(paramPrefix ? [paramPrefix] : []), ...issue.path.map(String)];
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0]!;
    const param = [...path, key].join('.');
    return new AppError('invalid_request', `Received unknown parameter: ${param}.`, { param });
  }
  const param = path.length > 0 ? formatPath(path) : undefined;
  if (issue.code === 'invalid_type' && issue.input === undefined && param) {
    return new AppError('invalid_request', `Missing required parameter: ${param}.`, { param });
  }
  if (!param) {
    return new AppError('invalid_request', `The request body ${lowerFirst(issue.message)}.`.replace(/\.\.$/, '.'));
  }
  return new AppError('invalid_request', `Invalid ${param}: ${lowerFirst(issue.message)}`.replace(/([^.])$/, '$1.'), {
    param,
  });
}

function formatPath(path: string[]): string {
  return path.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

function lowerFirst(text: string): string {
  // Keep messages that start with a field name or code as written.
  return /^[A-Z][a-z]/.test(text) ? text[0]!.toLowerCase() + text.slice(1) : text;
}

/**
 * An idempotency key, on every channel (the Idempotency-Key header, MCP's `idempotency_key`):
 * 1 to 255 printable ASCII characters. The same (account, mode, key) returns the first result.
 */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
