import type { FastifyServerOptions } from 'fastify';

/** Why a fastify schema is refused, for whoever adds one. */
const ZOD_VALIDATES =
  'plainpay routes declare no fastify schema: inputs are checked by zod (src/core/validation.ts), ' +
  'outputs written by the reply serializer (src/core/json-text.ts). Check the input with zod instead.';

function refuseSchemas(): never {
  // A programming error, met when the app starts: never an answer to a request.
  throw new Error(ZOD_VALIDATES);
}

/**
 * fastify's `schemaController` for every host. Inputs are checked in one place, by zod, so no route
 * declares a fastify schema; fastify would still load its own compilers (ajv and
 * fast-json-stringify, about 100 modules) when each instance is made. These factories stand in for
 * them: nothing is loaded, and a route that declares a schema makes its app fail to start, with
 * the rule above, rather than be validated a second, different way.
 */
export const noSchemaCompilers = {
  compilersFactory: { buildValidator: refuseSchemas, buildSerializer: refuseSchemas },
} as FastifyServerOptions['schemaController'];
