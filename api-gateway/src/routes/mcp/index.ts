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

/** Largest file read_file returns into a model's context. */
const MCP_MAX_READ_BYTES = 256 * 1024;

export default function mcpRoutes(app: FastifyInstance, _opts: unknown, done: (err?: Error) => void): void {
  // write_file carries base64 content inside JSON-RPC: allow a file of the size limit.
  const bodyLimit = Math.max(app.config.maxBodyBytes, Math.ceil((app.config.maxFileBytes * 4) / 3) + 65536);

  app.post('/mcp', { bodyLimit }, async (request: FastifyRequest, reply: FastifyReply) => {
    const server = buildMcpServer({
      principal: request.principal,
      sessions: app.sessions,
      execs: app.execs,
      limits: app.config.exec,
      maxReadBytes: Math.min(MCP_MAX_READ_BYTES, app.config.maxFileBytes),
      log: request.log,
    });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    reply.raw.once('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    reply.hijack();
    try {
      await transport.handleRequest(request.raw, reply.raw, request.body);
    } catch (err) {
      request.log.error({ err }, 'MCP request failed');
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { 'content-type': 'application/json' });
        reply.raw.end(
          JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null }),
        );
      }
    }
  });

  const notAllowed = (): never => {
    throw new ProblemError('method-not-allowed', 'this MCP endpoint is stateless: use POST');
  };
  app.get('/mcp', notAllowed);
  app.delete('/mcp', notAllowed);
  done();
}
