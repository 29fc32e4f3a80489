/**
 * GET /v1/sessions/{name}/watch: changes under a workspace directory of the session (ADR 0033),
 * as NDJSON (default), as Server-Sent Events (`Accept: text/event-stream`: `event: <type>`,
 * `data: <the line>`), or over a WebSocket (one JSON text message per line, then close 1000).
 * Every problem comes before the answer starts (HTTP problem+json, also for a refused upgrade):
 * the API key and tenant, the session, the path (403 path-forbidden outside the workspace). The
 * lines: `watching` first, then create/modify/delete/rename (and overflow), then one `end` with its
 * reason. A caller that does not read holds the agent back, whose bounded queue reports overflow.
 */
import type { WatchLine } from '@sandbox-platform/api';
import type {} from '@fastify/websocket';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Transform, type Readable } from 'node:stream';
import type WebSocket from 'ws';

import { MAX_WATCH_SECONDS } from '../../exec/agent/agent-watch.js';
import { logBrokeOff } from '../../plugins/errors.js';
import { resolveNamespace } from '../../service/namespaces.js';
import { traceOption } from '../../tracing/request-trace.js';
import { nameParams, namespaceQuery, problemResponses } from '../common-schemas.js';
import { checkOrigin } from '../ws-origin.js';

/** Watch length when the request names none. */
export const DEFAULT_WATCH_SECONDS = 300;
/** Bytes waiting for a WebSocket caller before the watch stops reading (the agent then queues). */
const WS_MAX_BUFFERED_BYTES = 256 * 1024;

type Query = { namespace?: string; path?: string; recursive?: boolean; timeoutSeconds?: number };
type WatchRoute = { Params: { name: string }; Querystring: Query };

const schema = {
  summary:
    'Follow changes under a workspace directory (NDJSON, SSE with Accept: text/event-stream, or WebSocket)',
  description:
    'Lines: {"type":"watching"} first, then {"type":"create"|"modify"|"delete"|"rename","path","from"?,"directory"} ' +
    'in the order the sandbox saw them, {"type":"overflow","dropped"} when events were dropped, and one {"type":"end","reason"}.',
  tags: ['watch'],
  params: nameParams,
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: {
      ...namespaceQuery.properties,
      path: {
        type: 'string',
        maxLength: 4096,
        description: 'Directory relative to the workspace (default: the workspace)',
      },
      recursive: { type: 'boolean', description: 'Watch subdirectories too (default false)' },
      timeoutSeconds: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_WATCH_SECONDS,
        description: `Seconds before the watch ends with reason timeout (default ${DEFAULT_WATCH_SECONDS})`,
      },
    },
  },
  response: problemResponses(404, 410, 501, 502, 503, 504),
} as const;

export default function watchRoutes(app: FastifyInstance, _opts: unknown, done: (err?: Error) => void): void {
  /** The open watch of each request, opened in preHandler (so problems come first). */
  const feeds = new WeakMap<FastifyRequest, Readable>();

  app.route<WatchRoute>({
    method: 'GET',
    url: '/v1/sessions/:name/watch',
    schema,
    preHandler: async (request) => {
      if (request.ws) checkOrigin(request, app.config.allowedOrigins);
      const { namespace: ns, timeoutSeconds, ...query } = request.query;
      const at = { namespace: resolveNamespace(request.principal, ns), name: request.params.name };
      const feed = await app.fileWatches.open(
        at,
        { ...query, timeoutSeconds: timeoutSeconds ?? DEFAULT_WATCH_SECONDS },
        traceOption(request),
      );
      feeds.set(request, feed);
      // The caller may leave before its answer starts: the agent's watch is closed.
      request.raw.socket.once('close', () => feed.destroy());
      feed.once('error', (err: Error) => logBrokeOff(request, request.params.name, err, 'watch broke off'));
    },
    handler: (request, reply) => serveHttp(request, reply, feeds.get(request)!),
    wsHandler: (socket: WebSocket, request) => {
      const feed = feeds.get(request);
      if (!feed) return void socket.close(1011, 'no watch');
      void serveWebSocket(socket, feed);
    },
  });
  done();
}

function serveHttp(request: FastifyRequest, reply: FastifyReply, feed: Readable): FastifyReply {
  const sse = (request.headers.accept ?? '').includes('text/event-stream');
  const text = new Transform({
    writableObjectMode: true,
    transform(line: WatchLine, _enc, cb) {
      const json = JSON.stringify(line);
      cb(null, sse ? `event: ${line.type}\ndata: ${json}\n\n` : `${json}\n`);
    },
  });
  text.once('close', () => feed.destroy());
  feed.once('error', (err) => text.destroy(err));
  return reply
    .type(sse ? 'text/event-stream' : 'application/x-ndjson')
    .header('cache-control', 'no-store')
    .send(feed.pipe(text));
}

/** One text message per line; reading pauses while the caller has not taken what was sent. */
async function serveWebSocket(socket: WebSocket, feed: Readable): Promise<void> {
  socket.once('close', () => feed.destroy());
  try {
    for await (const line of feed as AsyncIterable<WatchLine>) {
      if (socket.readyState !== socket.OPEN) return;
      socket.send(JSON.stringify(line));
      while (socket.bufferedAmount > WS_MAX_BUFFERED_BYTES && socket.readyState === socket.OPEN) {
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    socket.close(1000, 'watch ended');
  } catch {
    socket.close(1011, 'watch broke off');
  }
}
