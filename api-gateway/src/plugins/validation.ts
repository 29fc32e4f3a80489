/**
 * ajv, configured deliberately. Bodies: no type coercion (a string "5" is not a number) and no
 * removal of unknown fields: `additionalProperties: false` makes an unknown field a 400, so a typo
 * such as `timeoutSecond` is reported instead of silently ignored. Query strings and params are
 * strings on the wire, so they are coerced.
 */
import { Ajv, type Options } from 'ajv';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

const common: Options = { allErrors: false, useDefaults: true, removeAdditional: false, strict: true };

export default fp(
  (app: FastifyInstance, _opts: unknown, done: (err?: Error) => void) => {
    const bodies = new Ajv({ ...common, coerceTypes: false });
    const strings = new Ajv({ ...common, coerceTypes: true });
    app.setValidatorCompiler(({ schema, httpPart }) =>
      (httpPart === 'body' ? bodies : strings).compile(schema),
    );
    done();
  },
  { name: 'validation', fastify: '5.x' },
);
