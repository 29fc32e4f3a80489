/**
 * POST /mcp: the MCP Streamable HTTP endpoint, stateless. Each request gets a fresh McpServer and
 * transport bound to the caller's API key, so any replica can serve any request and no MCP session
 * state needs sharing; the SandboxSession name is the only state a client carries between calls.
 * Responses are plain JSON (enableJsonResponse), not SSE. GET and DELETE (server-initiated
 * streams, MCP session teardown) do not exist in stateless mode: 405.
 *
 * The body is read as text whatever its type and checked before the SDK sees it
 * (mcp/jsonrpc-body.ts): a content type other than application/json, text that is not JSON, and
 * JSON that is not a JSON-RPC message get a 4xx with a JSON-RPC error object (id null), never a
 * 500. The SDK's own refusals (e.g. 406 for an Accept header without both types) pass as it
 * answers them: its error callback only logs them.
 */
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { ProblemError } from '../../errors.js';
import {
  JSONRPC_PARSE_ERROR,
  checkContentType,
  checkMessages,
  refusal,
  type JsonRpcRefusal,
} from '../../mcp/jsonrpc-body.js';
import { buildMcpServer } from '../../mcp/tools.js';
import { holdResponse, responseHold } from '../../plugins/limits.js';
import { traceOption } from '../../tracing/request-trace.js';
import { responseSignal } from '../request-signal.js';

/** Largest file read_file returns into a model's context. */
const MCP_MAX_READ_BYTES = 256 * 1024;

/** Answers a JSON-RPC internal error when nothing was answered yet. */
function internalError(res: FastifyReply['raw']): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(500, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null }));
}

/** True for errors the SDK hits after a tool returned: its answer could not be sent. */
function unanswered(err: Error): boolean {
  return err.message.startsWith('Failed to send') || err.message.startsWith('Failed to enqueue');
}

export default function mcpRoutes(app: FastifyInstance, _opts: unknown, done: (err?: Error) => void): void {
  // The body is held whole (JSON-RPC): bounded by its own limit, not the file size (write_file's
  // content is bounded by it; larger files go through the streaming REST upload).
  const bodyLimit = app.config.mcpMaxBodyBytes;
  const { writeTimeoutMs } = app.config.server;
  // Read as text whatever the content type (also none); checked in the handler.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, next) => next(null, body));

  /** The parsed JSON-RPC body, or the refusal to answer. */
  const readBody = (request: FastifyRequest): Promise<{ value: unknown } | JsonRpcRefusal> => {
    const type = checkContentType(request.headers['content-type']);
    if (type) return Promise.resolve(type);
    const text = typeof request.body === 'string' ? request.body : '';
    return new Promise((resolve) => {
      void parseJson(request, text, (err: Error | null, value?: unknown) => {
        if (err) resolve(refusal(400, JSONRPC_PARSE_ERROR, 'Parse error: the body is not valid JSON'));
        else resolve(checkMessages(value) ?? { value });
      });
    });
  };

  app.post('/mcp', { bodyLimit }, async (request: FastifyRequest, reply: FastifyReply) => {
    const body = await readBody(request);
    if ('status' in body) return reply.code(body.status).type('application/json').send(body.body);
    // The client going away cancels the tool's command (the agent kills it).
    const { signal, dispose } = responseSignal(reply.raw);
    const server = buildMcpServer({
      principal: request.principal,
      sessions: app.sessions,
      execs: app.execs,
      processes: app.processes,
      code: app.codeRuns,
      snapshots: app.snapshots,
      egress: { rules: app.egressRules, audit: app.audit },
      limits: app.config.exec,
      maxReadBytes: Math.min(MCP_MAX_READ_BYTES, app.config.maxFileBytes),
      log: request.log,
      signal,
      ...traceOption(request),
      answerHold: responseHold(reply.raw, app.answerBudget),
      meter: app.cpuMeters.forKey(request.principal.keyId),
      hold: (bytes) => holdResponse(reply.raw, bytes, app.answerBudget, writeTimeoutMs),
    });
    // The SDK reports here both what it refuses (answered by it with a 4xx: logged at debug) and
    // an answer it could not send after a tool returned (logged and answered 500, never left
    // hanging).
    server.server.onerror = (err: Error) => {
      if (!unanswered(err)) return request.log.debug({ err }, 'MCP request refused by the SDK');
      request.log.error({ err }, 'MCP request failed');
      internalError(reply.raw);
    };
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    reply.raw.once('close', () => {
      dispose();
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    reply.hijack();
    try {
      await transport.handleRequest(request.raw, reply.raw, body.value);
    } catch (err) {
      request.log.error({ err }, 'MCP request failed');
      internalError(reply.raw);
    }
  });

  const notAllowed = (): never => {
    throw new ProblemError('method-not-allowed', 'this MCP endpoint is stateless: use POST');
  };
  app.get('/mcp', notAllowed);
  app.delete('/mcp', notAllowed);
  done();
}
