/**
 * GET /v1/sessions/{name}/pty: a terminal (`bash -i` on a PTY in the sandbox) over WebSocket,
 * bridged to the agent's own `/v1/pty` (ADR 0018). Everything that can be refused is refused
 * before the caller's upgrade is answered, as HTTP problem+json: the API key and tenant checks,
 * the upgrade's Origin (routes/ws-origin.ts), the session's readiness and transport, and the
 * agent's own answer (the gateway opens the agent's
 * WebSocket first: 409 too-many-terminals, 503 pty-unavailable pass through). Then messages flow
 * as the agent defines them: binary frames are terminal bytes both ways, text frames are JSON
 * control messages (`resize` from the client, validated here against the wire schema; one `exit`
 * from the agent, then close 1000). Buffers are bounded both ways (exec/relay/ws-bridge.ts).
 *
 * Browsers cannot set an Authorization header on a WebSocket: this route takes the API key from
 * the header, which the web console's hook (console/ws-key.ts) sets from a subprotocol for this
 * route only (ADR 0032).
 */
import {
  AGENT_PATHS,
  exitEventSchema,
  ptyQuerySchema,
  ptyResizeMessageSchema,
  type PtyQuery,
} from '@sandbox-platform/api';
import type {} from '@fastify/websocket';
import { Ajv } from 'ajv';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type WebSocket from 'ws';

import { ProblemError } from '../../errors.js';
import { agentProblem } from '../../exec/agent/agent-transport.js';
import { UpgradeRefusedError } from '../../exec/relay/ws-dial.js';
import { bridgeSockets } from '../../exec/relay/ws-bridge.js';
import { activitySubject } from '../../service/exec-service.js';
import { resolveNamespace } from '../../service/namespaces.js';
import { traceOption } from '../../tracing/request-trace.js';
import { nameParams, namespaceQuery, problemResponses } from '../common-schemas.js';
import { checkOrigin } from '../ws-origin.js';

type PtyRoute = { Params: { name: string }; Querystring: PtyQuery & { namespace?: string } };

/** Bytes waiting for one side's socket before the other side is paused (the agent's own bound). */
export const PTY_MAX_BUFFERED_BYTES = 1024 * 1024;
/** Deadline of the agent's WebSocket handshake. */
const DIAL_TIMEOUT_MS = 10_000;

const ajv = new Ajv({ allErrors: false, strict: true });
const validResize = ajv.compile(ptyResizeMessageSchema);
const validExit = ajv.compile(exitEventSchema);

/** A text message passes only when it is one of the contract's (else the bridge closes 1008). */
function checkJson(validate: (v: unknown) => boolean, what: string): (text: string) => string | undefined {
  return (text) => {
    try {
      return validate(JSON.parse(text)) ? undefined : `invalid ${what} message`;
    } catch {
      return `invalid ${what} message: not JSON`;
    }
  };
}

const schema = {
  summary: 'Open a terminal (bash -i on a PTY) in a session over WebSocket',
  description:
    'Binary frames are terminal bytes both ways; text frames are JSON control messages: ' +
    '{"type":"resize","cols":N,"rows":N} from the client, one {"type":"exit","exitCode":N} from the server before it closes with 1000.',
  tags: ['terminal'],
  params: nameParams,
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: { ...ptyQuerySchema.properties, ...namespaceQuery.properties },
  },
  response: problemResponses(404, 409, 410, 426, 501, 502, 503, 504),
} as const;

export default function ptyRoutes(app: FastifyInstance, _opts: unknown, done: (err?: Error) => void): void {
  /** The agent's socket of each request, opened in preHandler and bridged in wsHandler. */
  const upstreams = new WeakMap<FastifyRequest, WebSocket>();

  app.route<PtyRoute>({
    method: 'GET',
    url: '/v1/sessions/:name/pty',
    schema,
    preHandler: async (request) => {
      const namespace = resolveNamespace(request.principal, request.query.namespace);
      if (request.ws) checkOrigin(request, app.config.allowedOrigins);
      const at = { namespace, name: request.params.name };
      const target = await app.processes.target(at, traceOption(request));
      if (!request.ws)
        throw new ProblemError('upgrade-required', 'this route is a WebSocket: send Upgrade: websocket');
      const interactive = app.interactive!;
      const { namespace: _ns, ...query } = request.query;
      const search = new URLSearchParams(
        Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]),
      ).toString();
      try {
        const upstream = await interactive.dialAgent(
          target,
          AGENT_PATHS.pty,
          { search, timeoutMs: DIAL_TIMEOUT_MS, maxPayload: PTY_MAX_BUFFERED_BYTES },
          request.traceContext,
        );
        upstreams.set(request, upstream);
        // The caller may leave before its upgrade completes: the agent's terminal is hung up.
        request.raw.socket.once('close', () => {
          if (upstreams.get(request) === upstream) upstream.close(1001, 'client left');
        });
      } catch (err) {
        if (err instanceof UpgradeRefusedError) throw agentProblem(err.status, err.body);
        throw new ProblemError('upstream-error', 'the sandbox agent could not be reached', {
          cause: err,
          retryAfterSeconds: 1,
        });
      }
      app.activity.touch(activitySubject(target, traceOption(request)));
      request.log.info({ keyId: request.principal.keyId, namespace, session: at.name }, 'terminal opened');
    },
    handler: () => {
      throw new ProblemError('upgrade-required', 'this route is a WebSocket: send Upgrade: websocket');
    },
    wsHandler: (socket: WebSocket, request) => {
      const upstream = upstreams.get(request);
      upstreams.delete(request);
      if (!upstream) return void socket.close(1011, 'no terminal');
      bridgeSockets(socket, upstream, {
        maxBufferedBytes: PTY_MAX_BUFFERED_BYTES,
        checkClientText: checkJson((v) => validResize(v), 'control'),
        checkUpstreamText: checkJson((v) => validExit(v), 'exit'),
        onEnd: ({ by, code }) =>
          request.log.info(
            { keyId: request.principal.keyId, session: request.params.name, by, code },
            'terminal closed',
          ),
      });
    },
  });
  done();
}
