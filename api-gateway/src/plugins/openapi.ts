/**
 * The OpenAPI 3.1 document, generated from the same route schemas fastify validates with: an
 * onRoute hook records every documented route, and GET /openapi.json renders them. Nothing is
 * written twice, so the document cannot drift from the validation.
 */
import { PLATFORM_VERSION } from '@sandbox-platform/api';
import type { FastifyInstance, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';

import { PROBLEMS, problemBody, type ProblemSlug } from '../errors.js';
import { problemSchema } from './errors.js';

interface RecordedRoute {
  method: string;
  url: string;
  schema: Record<string, unknown>;
}

type JsonSchema = {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: readonly string[];
  [k: string]: unknown;
};

/** `/v1/sessions/:name/files/*` -> `/v1/sessions/{name}/files/{path}`. */
function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, '{path}');
}

function parameters(schema: Record<string, unknown>): unknown[] {
  const out: unknown[] = [];
  for (const [where, key] of [
    ['path', 'params'],
    ['query', 'querystring'],
  ] as const) {
    const s = schema[key] as JsonSchema | undefined;
    for (const [name, prop] of Object.entries(s?.properties ?? {})) {
      out.push({
        name: name === '*' ? 'path' : name,
        in: where,
        required: where === 'path' || (s?.required ?? []).includes(name),
        schema: prop,
        ...(prop.description ? { description: prop.description } : {}),
      });
    }
  }
  return out;
}

/** The problem schema once, in components; every problem answer refers to it (a 30x smaller document). */
const PROBLEM_REF = { $ref: '#/components/schemas/Problem' };
const PROBLEM_JSON = JSON.stringify(problemSchema);

function responses(schema: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const declared = (schema.response ?? {}) as Record<string, JsonSchema>;
  for (const [status, s] of Object.entries(declared)) {
    const problem = Number(status) >= 400;
    const media = problem ? 'application/problem+json' : 'application/json';
    const body = JSON.stringify(s) === PROBLEM_JSON ? PROBLEM_REF : s;
    out[status] =
      s.type === 'null'
        ? { description: 'No content' }
        : { description: problem ? 'Problem' : 'OK', content: { [media]: { schema: body } } };
  }
  if (Object.keys(out).length === 0 || !Object.keys(out).some((k) => k.startsWith('2'))) {
    out['200'] = { description: 'OK (body described in the summary)' };
  }
  return out;
}

function operation(route: RecordedRoute, raw: boolean): Record<string, unknown> {
  const s = route.schema;
  const op: Record<string, unknown> = {
    summary: s.summary,
    tags: s.tags,
    parameters: parameters(s),
    responses: responses(s),
    security: [{ bearer: [] }],
  };
  if (s.body) {
    const content: Record<string, unknown> = { 'application/json': { schema: s.body } };
    // A route that also takes NDJSON (exec/stream with streamed stdin) documents it next to JSON.
    if (s.ndjsonBody) content['application/x-ndjson'] = { schema: s.ndjsonBody };
    op.requestBody = { required: true, content };
  } else if (raw)
    op.requestBody = {
      required: true,
      content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    };
  return op;
}

/** Builds the document from the recorded routes. */
export function buildOpenApi(routes: readonly RecordedRoute[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = openApiPath(r.url);
    paths[path] ??= {};
    paths[path][r.method.toLowerCase()] = operation(r, r.method === 'PUT');
  }
  const problemTypes = Object.keys(PROBLEMS).map((slug) => {
    const b = problemBody(slug as ProblemSlug);
    return { type: b.type, status: b.status, title: b.title };
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'sandbox-platform api-gateway',
      version: PLATFORM_VERSION,
      description: 'Sessions, exec and files of SandboxSession sandboxes. Errors are RFC 9457 problem+json.',
      'x-problem-types': problemTypes,
    },
    components: {
      schemas: { Problem: problemSchema },
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key' } },
    },
    paths,
  };
}

export default fp(
  (app: FastifyInstance, _opts: unknown, done: (err?: Error) => void) => {
    const routes: RecordedRoute[] = [];
    app.addHook('onRoute', (route: RouteOptions) => {
      const schema = route.schema as Record<string, unknown> | undefined;
      if (!schema?.summary || route.config?.public === true) return;
      for (const method of [route.method].flat()) {
        if (method === 'HEAD') continue;
        routes.push({ method, url: route.url, schema });
      }
    });
    app.decorate('openApiDocument', () => buildOpenApi(routes));
    done();
  },
  { name: 'openapi', fastify: '5.x' },
);

declare module 'fastify' {
  interface FastifyInstance {
    /** Renders the OpenAPI document of every documented route (plugins/openapi.ts). */
    openApiDocument: () => Record<string, unknown>;
  }
}
