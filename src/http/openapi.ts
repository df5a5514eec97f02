import { z } from 'zod';
import { ERROR_CODES, type ErrorCode } from '../core/errors.ts';
import type { ApiKeyScope } from '../domain/api-key-secret.ts';

/**
 * OpenAPI 3.1 from the same zod schemas that validate requests: tools describe themselves
 * (tool-routes.ts), and routes that are not tools declare an ApiOperation beside their handler.
 * Each operation lists every status it can answer; most are derived from what the operation is
 * (authenticated, takes a body, names ids, accepts Idempotency-Key: see errorCodesOf), and the
 * operation adds what only its handler knows (`accepted`, `errors`).
 */
export interface ApiOperation {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** null: public. */
  scope: ApiKeyScope | null | 'any';
  body?: z.ZodType;
  query?: z.ZodType;
  /** The 200 body. */
  response: z.ZodType;
  /** The 200 body's media type when it is not JSON; `response` then describes the text. */
  responseMediaType?: 'text/csv';
  /** A 202 the operation answers instead of its 200 (a money tool call the policy held). */
  accepted?: { description: string; schema: z.ZodType };
  /** Operations that accept Idempotency-Key. */
  idempotent?: boolean;
  /** Errors the handler raises beyond those the operation's shape implies (see errorCodesOf). */
  errors?: readonly ErrorCode[];
  /** false: the handler never reads the database, so an outage of it cannot answer 503. */
  database?: false;
}

/** The codes an error body can carry: AppError.toBody leaves `code` out of internal errors. */
const SENT_CODES = (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => code !== 'internal');

/** Every error response's body (AppError.toBody): the Error component. */
const errorBody = z
  .object({
    error: z.object({
      type: z
        .enum([...new Set(Object.values(ERROR_CODES).map((entry) => entry.type))])
        .describe('Error category, e.g. invalid_request_error, authentication_error.'),
      message: z.string().describe('Human-readable explanation naming the field and rule.'),
      param: z.string().optional().describe('The parameter at fault, when there is one.'),
      code: z.enum(SENT_CODES).optional().describe('The machine-readable reason. Absent on internal errors (500).'),
    }),
  })
  .describe('Every error, on every endpoint, has this shape.');

/** What each code means to a client; a Record, so a new code in errors.ts cannot go undocumented. */
const ERROR_MEANINGS: Record<ErrorCode, string> = {
  invalid_request: 'the request is invalid: the message and param name the field and rule',
  authentication_required: 'no API key was sent',
  authentication_failed: 'the API key is malformed, unknown, revoked or expired',
  insufficient_funds: 'the balance cannot cover the amount; nothing was written',
  permission_denied: 'the key lacks the scope this operation needs, or may not do it (approve its own request)',
  policy_denied: "the account's policy refuses the action; nothing moved",
  ungrounded_argument: "an agent's money call named a value it did not get from the instruction or a read",
  unclear_instruction:
    "an agent's money call while the instruction holds a condition, a wait, a negation, a repetition or a number that reads more than one way: nothing moved, the agent asks",
  not_found: "no such object, which is also the answer for another account's or the other mode's ids",
  method_not_allowed: 'the method is not allowed here',
  idempotency_conflict: 'the Idempotency-Key was first used with other parameters',
  conflict:
    'the request conflicts with the current state: a reference that names another object, a request with the same key still in progress, or an object no longer in a state that allows it',
  payload_too_large: 'the body is larger than the configured limit',
  unsupported_media_type: 'the body is not sent as application/json',
  rate_limited: 'too many requests with this key: retry after Retry-After seconds',
  internal: 'an internal error; it was logged, retry later',
  unavailable:
    'the database, or something else the answer depends on, cannot be reached right now: retry after Retry-After seconds (a write with the same Idempotency-Key)',
};

/**
 * The errors an operation can answer with, from what it is. Every route can get a malformed
 * request (400) and an internal error (500), and every route that reads the database (all but
 * `database: false`) answers 503 `unavailable` while it cannot be reached. The rest follow the code
 * that answers them:
 * app.ts's onRequest hook authenticates (401), rate-limits (429) and checks the scope (403) of
 * routes with a key; its JSON-only body parser and body limit answer 415 and 413 for any method
 * with a body; an id in the path, or an `…_id` field of the body (the object it acts on), can name
 * nothing (404); the pipeline's idempotency check answers 409 (another body, or the first request
 * still running).
 */
function errorCodesOf(op: ApiOperation, inputFields: readonly string[]): ErrorCode[] {
  const codes = new Set<ErrorCode>(['invalid_request', 'internal']);
  if (op.database !== false) codes.add('unavailable');
  if (op.scope !== null) {
    codes.add('authentication_required').add('authentication_failed').add('rate_limited');
    if (op.scope !== 'any') codes.add('permission_denied');
  }
  if (op.method !== 'GET') codes.add('payload_too_large').add('unsupported_media_type');
  if (pathParamsOf(op.path).length > 0 || inputFields.some((field) => field.endsWith('_id'))) codes.add('not_found');
  if (op.idempotent) codes.add('idempotency_conflict').add('conflict');
  for (const code of op.errors ?? []) codes.add(code);
  return [...codes];
}

export function buildOpenApiDocument(operations: readonly ApiOperation[], serverUrl: string): Record<string, unknown> {
  const components = componentNames(operations);
  const output = (schema: z.ZodType): Record<string, unknown> => {
    const name = components.get(schema);
    return name === undefined ? outputSchema(schema, components) : { $ref: componentRef(name) };
  };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of operations) {
    const openApiPath = op.path.replace(/:([A-Za-z_]+)/g, '{$1}');
    const parameters: unknown[] = pathParamsOf(op.path).map((name) => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    if (op.query) {
      const schema = inputSchema(op.query) as {
        properties?: Record<string, { description?: string }>;
        required?: string[];
      };
      for (const [name, property] of Object.entries(schema.properties ?? {})) {
        parameters.push({
          name,
          in: 'query',
          required: schema.required?.includes(name) ?? false,
          ...(property.description ? { description: property.description } : {}),
          schema: property,
        });
      }
    }
    if (op.idempotent) {
      parameters.push({
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description:
          'Repeat a request safely: the same key and body replay the first result (24 h); another body is a 409.',
        schema: { type: 'string', maxLength: 255 },
      });
    }
    const body = op.body ? inputSchema(op.body) : undefined;
    const queryFields = parameters.flatMap((p) =>
      (p as { in: string }).in === 'query' ? [(p as { name: string }).name] : [],
    );
    const bodyFields = Object.keys((body?.properties as Record<string, unknown> | undefined) ?? {});

    // Numeric keys: JavaScript lists them in ascending order, so the document does too.
    const responses: Record<string, unknown> = {
      '200': {
        description: 'Success',
        content: { [op.responseMediaType ?? 'application/json']: { schema: output(op.response) } },
      },
    };
    if (op.accepted) {
      responses['202'] = {
        description: op.accepted.description,
        content: { 'application/json': { schema: output(op.accepted.schema) } },
      };
    }
    for (const [status, codes] of byStatus(errorCodesOf(op, [...queryFields, ...bodyFields]))) {
      responses[status] = errorResponse(codes);
    }

    paths[openApiPath] ??= {};
    paths[openApiPath][op.method.toLowerCase()] = {
      operationId: op.operationId,
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      tags: [op.tag],
      security: op.scope === null ? [] : [{ bearerAuth: [] }],
      ...(op.scope && op.scope !== 'any' ? { 'x-required-scope': op.scope } : {}),
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(body ? { requestBody: { required: true, content: { 'application/json': { schema: body } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'plainpay API',
      version: '1.0.0',
      description:
        'Hosted checkout in local currency, settled on-chain in a stablecoin, with money movement by tools and an agent under policy.',
    },
    servers: [{ url: serverUrl }],
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'A secret key: sk_live_… or sk_test_…' },
      },
      schemas: Object.fromEntries(
        [...components].map(([schema, name]) => [name, outputSchema(schema, components)] as const),
      ),
    },
    paths,
  };
}

/**
 * Response objects become named components, so a generated client has a type called Payout and
 * not an anonymous copy per operation: the Error body, and each object a response is (or lists)
 * that says what it is in a literal `object` field, named after it (payout → Payout,
 * confirmation_required → ConfirmationRequired). A variant under a name already taken (the test
 * helper's payment with its attempt) stays inline.
 */
function componentNames(operations: readonly ApiOperation[]): Map<z.ZodType, string> {
  const names = new Map<z.ZodType, string>([[errorBody, 'Error']]);
  const taken = new Set(names.values());
  const claim = (schema: z.ZodType): void => {
    const kind = objectKindOf(schema);
    if (kind === undefined || names.has(schema)) return;
    const name = kind.replace(/(^|_)([a-z])/g, (_match, _sep, letter: string) => letter.toUpperCase());
    if (taken.has(name)) return;
    names.set(schema, name);
    taken.add(name);
  };
  for (const op of operations) {
    for (const schema of [op.response, op.accepted?.schema]) {
      if (schema === undefined) continue;
      if (objectKindOf(schema, true) === 'list') {
        const items = (schema as z.ZodObject).shape.data;
        if (items instanceof z.ZodArray) claim(items.element as z.ZodType);
      } else {
        claim(schema);
      }
    }
  }
  return names;
}

/** The value of an object schema's literal `object` field ('payout'); lists only if asked. */
function objectKindOf(schema: z.ZodType, includeList = false): string | undefined {
  if (!(schema instanceof z.ZodObject)) return undefined;
  const field = schema.shape.object;
  if (!(field instanceof z.ZodLiteral) || field.values.size !== 1) return undefined;
  const kind = field.value;
  return typeof kind === 'string' && (includeList || kind !== 'list') ? kind : undefined;
}

function componentRef(name: string): string {
  return `#/components/schemas/${name}`;
}

/** Groups codes by the status errors.ts maps them to: { '403': ['permission_denied', 'policy_denied'] }. */
function byStatus(codes: readonly ErrorCode[]): Map<string, ErrorCode[]> {
  const grouped = new Map<string, ErrorCode[]>();
  for (const code of codes) {
    const status = String(ERROR_CODES[code].status);
    grouped.set(status, [...(grouped.get(status) ?? []), code]);
  }
  return grouped;
}

function errorResponse(codes: readonly ErrorCode[]): unknown {
  // "No API key was sent (authentication_required). The API key is … (authentication_failed)."
  const description = codes
    .map((code) => {
      const meaning = ERROR_MEANINGS[code];
      const sentence = meaning.charAt(0).toUpperCase() + meaning.slice(1);
      return code === 'internal' ? `${sentence}.` : `${sentence} (${code}).`;
    })
    .join(' ');
  const headers: Record<string, unknown> = {};
  if (codes.includes('rate_limited') || codes.includes('unavailable')) {
    headers['Retry-After'] = { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } };
  }
  if (codes.includes('authentication_required')) {
    headers['WWW-Authenticate'] = { description: 'The bearer challenge.', schema: { type: 'string' } };
  }
  return {
    description,
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    content: { 'application/json': { schema: { $ref: componentRef('Error') } } },
  };
}

/** A request body or query as JSON Schema, inline: what a client sends (defaults optional). */
function inputSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return rest;
}

/** A response body as JSON Schema, with every named component inside it as a $ref. */
function outputSchema(schema: z.ZodType, components: ReadonlyMap<unknown, string>): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, {
    io: 'output',
    unrepresentable: 'any',
    override: ({ zodSchema, jsonSchema }) => {
      const name = components.get(zodSchema);
      if (name === undefined || zodSchema === (schema as unknown)) return;
      for (const key of Object.keys(jsonSchema)) delete jsonSchema[key];
      jsonSchema.$ref = componentRef(name);
    },
  }) as Record<string, unknown>;
  return rest;
}

export function pathParamsOf(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!);
}
