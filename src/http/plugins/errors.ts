import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, isConnectionFailure, toAppError } from '../../core/errors.ts';
import { isDatabaseUnreachable } from '../../db/connect.ts';

/**
 * Every error leaves the API as the seed's error object: { error: { type, message, param? } }.
 * Framework errors (bad JSON, wrong content type, oversized body) are translated here, in one
 * place; anything unexpected becomes a generic api_error and is logged with its cause.
 */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((raw: FastifyError | AppError, request, reply) => {
    const error = translate(raw, app.initialConfig.bodyLimit);
    if (error.code === 'unavailable' && isConnectionFailure(error.cause)) {
      // The database is down: said once per outage where the connection is lost (db/connect.ts).
      // Anything else unreachable (a chain node, a provider, a wrong URL) is said here, each time.
      if (isDatabaseUnreachable()) request.log.debug({ err: error.cause }, 'request failed: database unreachable');
      else request.log.warn({ err: error.cause }, 'request failed: a service it depends on cannot be reached');
    } else if (error.code === 'internal' || error.status >= 500) {
      request.log.error({ err: error.cause ?? raw }, 'request failed');
    }
    sendError(reply, error);
  });

  app.setNotFoundHandler((request, reply) => {
    sendError(
      reply,
      new AppError(
        'not_found',
        `Unrecognized request URL (${request.method} ${request.url.split('?')[0]}). See the API reference at /openapi.json.`,
      ),
    );
  });
}

/**
 * fastify answers a few routing errors (a malformed percent-escape in the path, a path parameter
 * longer than maxParamLength) before any hook or error handler runs, with a body of its own. Given
 * as the instance's frameworkErrors option, this answers them with the error object instead.
 */
export function handleFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header('Request-Id', request.id);
  sendError(reply, translate(error, request.server.initialConfig.bodyLimit));
}

export function sendError(reply: FastifyReply, error: AppError): FastifyReply {
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  return reply.code(error.status).type('application/json; charset=utf-8').send(error.toBody());
}

function translate(error: FastifyError | AppError, bodyLimit: number | undefined): AppError {
  if (error instanceof AppError) return error;
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('invalid_request', `The request body is not valid JSON: ${error.message}`);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError(
        'payload_too_large',
        `The request body is too large. Bodies are limited to ${describeBytes(bodyLimit)}.`,
      );
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError(
        'unsupported_media_type',
        'Request bodies must be JSON: send the header "Content-Type: application/json".',
      );
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_ASYNC_CONSTRAINT':
      return new AppError('invalid_request', 'The request URL is malformed.');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new AppError(
        'invalid_request',
        'A path segment of the request URL is longer than 100 characters; no id is that long.',
      );
  }
  if (error instanceof SyntaxError)
    return new AppError('invalid_request', `The request body is not valid JSON: ${error.message}`);
  const status = (error as FastifyError).statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return new AppError(status === 413 ? 'payload_too_large' : 'invalid_request', error.message);
  }
  return toAppError(error);
}

export type { FastifyRequest };

/** 1048576 → "1 MB", 65536 → "64 KB", 1000 → "1000 bytes" (BODY_LIMIT_BYTES is configurable). */
function describeBytes(bytes: number | undefined): string {
  if (bytes === undefined) return 'the configured size';
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KB`;
  return `${bytes} bytes`;
}
