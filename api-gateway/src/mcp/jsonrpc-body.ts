/**
 * The body of `POST /mcp` checked before the MCP SDK sees it (issue 25): anything that is not a
 * JSON-RPC message (or a non-empty batch of them) sent as application/json is answered here with a
 * 4xx and a JSON-RPC error object whose id is null, as JSON-RPC 2.0 prescribes:
 *   - another or no Content-Type: 415, -32600 Invalid Request;
 *   - not JSON (or JSON with a `__proto__` key, refused as everywhere in the gateway): 400, -32700
 *     Parse error;
 *   - JSON that is not a JSON-RPC message (`{"command":"id"}`, `[[[]]]`, `[]`, `"x"`, `null`, 7):
 *     400, -32600 Invalid Request.
 * The SDK's own message schema decides what a message is, so what passes here is what it accepts.
 * Pure functions; the route (routes/mcp/index.ts) parses the JSON with fastify's parser.
 */
import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';

/** JSON-RPC 2.0 error codes used here. */
export const JSONRPC_PARSE_ERROR = -32700;
export const JSONRPC_INVALID_REQUEST = -32600;

/** A refusal: the HTTP status and the JSON-RPC error object to answer with. */
export interface JsonRpcRefusal {
  status: number;
  body: { jsonrpc: '2.0'; error: { code: number; message: string }; id: null };
}

/** Most messages in one batch (the SDK refuses more itself). */
const MAX_BATCH = 100;

/** The refusal answered for `code` and `message` with `status`. */
export function refusal(status: number, code: number, message: string): JsonRpcRefusal {
  return { status, body: { jsonrpc: '2.0', error: { code, message }, id: null } };
}

/** Undefined when the Content-Type is application/json (any parameters); else the 415 refusal. */
export function checkContentType(contentType: string | undefined): JsonRpcRefusal | undefined {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json') return undefined;
  return refusal(
    415,
    JSONRPC_INVALID_REQUEST,
    'Invalid Request: the body must be JSON-RPC 2.0 sent as Content-Type: application/json',
  );
}

/** Undefined when the parsed body is a JSON-RPC message or a non-empty batch of them; else the refusal. */
export function checkMessages(body: unknown): JsonRpcRefusal | undefined {
  const batch = Array.isArray(body);
  const messages: unknown[] = batch ? body : [body];
  if (messages.length === 0) {
    return refusal(400, JSONRPC_INVALID_REQUEST, 'Invalid Request: an empty batch');
  }
  if (messages.length > MAX_BATCH) {
    return refusal(400, JSONRPC_INVALID_REQUEST, `Invalid Request: a batch holds at most ${MAX_BATCH}`);
  }
  const bad = messages.findIndex((m) => !JSONRPCMessageSchema.safeParse(m).success);
  if (bad >= 0) {
    const where = batch ? `batch item ${bad}` : 'the body';
    return refusal(400, JSONRPC_INVALID_REQUEST, `Invalid Request: ${where} is not a JSON-RPC 2.0 message`);
  }
  // Answers are matched to requests by id: a repeated one would leave a request unanswered.
  const ids = messages.flatMap((m) => (isRequest(m) ? [JSON.stringify(m.id)] : []));
  if (new Set(ids).size !== ids.length) {
    return refusal(
      400,
      JSONRPC_INVALID_REQUEST,
      'Invalid Request: the requests of a batch need distinct ids',
    );
  }
  return undefined;
}

function isRequest(m: unknown): m is { id: unknown; method: string } {
  return typeof m === 'object' && m !== null && 'method' in m && 'id' in m;
}
