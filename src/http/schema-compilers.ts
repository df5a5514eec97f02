import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

/** fastify's own dependencies, resolved from where fastify is (they are not ours). */
const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));

/** A compiler factory of fastify's: its schemas and options in, a compiler out. */
type Factory = (externalSchemas: unknown, options?: unknown) => unknown;

/** The factory made by `selector` (a package of fastify's), loaded at its first call. */
function loadedAtFirstUse(selector: string): Factory {
  let factory: Factory | undefined;
  return (externalSchemas, options) => {
    factory ??= (fromFastify(selector) as () => Factory)();
    return factory(externalSchemas, options);
  };
}

/**
 * fastify's `schemaController` option for every host: its schema compilers (ajv, fast-json-stringify)
 * are loaded by the first route that declares a fastify schema, instead of by every fastify
 * instance. No route of ours declares one (zod checks every input, core/validation.ts), and
 * loading them was about 100 modules of every start. Should a route declare one, it gets fastify's
 * usual compilers, the same ones fastify would have made.
 */
export const lazySchemaCompilers = {
  compilersFactory: {
    buildValidator: loadedAtFirstUse('@fastify/ajv-compiler'),
    buildSerializer: loadedAtFirstUse('@fastify/fast-json-stringify-compiler'),
  },
} as FastifyServerOptions['schemaController'];
