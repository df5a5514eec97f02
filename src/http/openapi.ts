import { z } from 'zod';
import type { AnyTool } from '../core/tool.ts';
import type { ApiKeyScope } from '../domain/api-key-secret.ts';

/**
 * OpenAPI 3.1 from the same zod schemas that validate requests: tools describe themselves, and
 * routes that are not tools declare an ApiOperation beside their handler.
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
  response: z.ZodType;
  /** Operations that accept Idempotency-Key. */
  idempotent?: boolean;
}

export function toolOperations(tools: readonly AnyTool[]): ApiOperation[] {
  return tools.flatMap((tool): ApiOperation[] => {
    if (!tool.http) return [];
    const pathParams = pathParamsOf(tool.http.path);
    const withoutPath = omitKeys(tool.input, pathParams);
    const isRead = tool.http.method === 'GET';
    return [
      {
        method: tool.http.method,
        path: tool.http.path,
        operationId: tool.name,
        summary: tool.title,
        description: tool.description,
        tag: tagOf(tool.http.path),
        scope: tool.scope,
        ...(isRead ? { query: withoutPath } : { body: withoutPath }),
        response: tool.output,
        idempotent: tool.http.method === 'POST',
      },
    ];
  });
}

const ERROR_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['type', 'message'],
      properties: {
        type: { type: 'string', description: 'Error category, e.g. invalid_request_error, authentication_error.' },
        message: { type: 'string', description: 'Human-readable explanation naming the field and rule.' },
        param: { type: 'string', description: 'The parameter at fault, when there is one.' },
        code: { type: 'string', description: 'A finer machine-readable reason.' },
      },
    },
  },
};

export function buildOpenApiDocument(operations: readonly ApiOperation[], serverUrl: string): Record<string, unknown> {
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
      const schema = jsonSchema(op.query, 'input') as {
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
    const responses: Record<string, unknown> = {
      '200': { description: 'Success', content: { 'application/json': { schema: jsonSchema(op.response, 'output') } } },
      '400': errorResponse('Invalid request: the message and param name the field and rule.'),
      '404': errorResponse("Not found (also for another account's or the other mode's ids)."),
      '429': errorResponse('Rate limit exceeded: back off for Retry-After seconds.'),
    };
    if (op.scope !== null) {
      responses['401'] = errorResponse('Missing or invalid API key.');
      responses['403'] = errorResponse('The key lacks the required scope.');
    }
    if (op.idempotent)
      responses['409'] = errorResponse('Idempotency-Key reused with different parameters, or a conflicting state.');
    paths[openApiPath] ??= {};
    paths[openApiPath][op.method.toLowerCase()] = {
      operationId: op.operationId,
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      tags: [op.tag],
      security: op.scope === null ? [] : [{ bearerAuth: [] }],
      ...(op.scope && op.scope !== 'any' ? { 'x-required-scope': op.scope } : {}),
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(op.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(op.body, 'input') } } } }
        : {}),
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
      schemas: { Error: ERROR_SCHEMA },
    },
    paths,
  };
}

function errorResponse(description: string): unknown {
  return { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

function pathParamsOf(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!);
}

function omitKeys(schema: z.ZodType, keys: string[]): z.ZodType {
  if (keys.length === 0) return schema;
  const object = schema as unknown as z.ZodObject;
  return object.omit(Object.fromEntries(keys.map((k) => [k, true])) as never);
}

function tagOf(path: string): string {
  const segment =
    path
      .split('/')
      .filter(Boolean)
      .find((s) => s !== 'v1' && !s.startsWith(':')) ?? 'misc';
  return segment.replace(/_/g, ' ');
}
