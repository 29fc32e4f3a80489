/**
 * POST /mcp: the MCP Streamable HTTP endpoint, stateless. Each request gets a fresh McpServer and
 * transport bound to the caller's API key, so any replica can serve any request and no MCP session
 * state needs sharing; the SandboxSession name is the only state a client carries between calls.
 * Responses are plain JSON (enableJsonResponse), not SSE. GET and DELETE (server-initiated
 * streams, MCP session teardown) do not exist in stateless mode: 405.
 */
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { ProblemError } from '../../errors.js';
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

export default function mcpRoutes(app: FastifyInstance, _opts: unknown, done: (err?: Error) => void): void {
  // The body is held whole (JSON-RPC): bounded by its own limit, not the file size (write_file's
  // content is bounded by it; larger files go through the streaming REST upload).
  const bodyLimit = app.config.mcpMaxBodyBytes;
  const { writeTimeoutMs } = app.config.server;

  app.post('/mcp', { bodyLimit }, async (request: FastifyRequest, reply: FastifyReply) => {
    // The client going away cancels the tool's command (the agent kills it).
    const { signal, dispose } = responseSignal(reply.raw);
    const server = buildMcpServer({
      principal: request.principal,
      sessions: app.sessions,
      execs: app.execs,
      processes: app.processes,
      limits: app.config.exec,
      maxReadBytes: Math.min(MCP_MAX_READ_BYTES, app.config.maxFileBytes),
      log: request.log,
      signal,
      ...traceOption(request),
      answerHold: responseHold(reply.raw, app.answerBudget),
      meter: app.cpuMeters.forKey(request.principal.keyId),
      hold: (bytes) => holdResponse(reply.raw, bytes, app.answerBudget, writeTimeoutMs),
    });
    // Whatever fails inside the SDK after a tool returned (e.g. writing the response) is logged
    // and answered, never left hanging.
    server.server.onerror = (err: Error) => {
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
      await transport.handleRequest(request.raw, reply.raw, request.body);
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
