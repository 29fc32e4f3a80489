/**
 * node:http's `clientError`: a request that broke while it was being received (the request or
 * headers timeout, a malformed or oversized head). When nothing was written on the connection yet,
 * a bare status is answered (fastify's default answers, with its bodies); when an answer is
 * already under way, the connection is only cut. A streamed exec answers while its NDJSON body is
 * still arriving, so a caller that keeps the body open past the request timeout meets it
 * mid-answer, and a status line written into a chunked answer breaks its framing (fastify's
 * default handler did that: clients failed with "Invalid character in chunk size").
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';

/** Status and message by node:http error code; anything else is a 400. */
const ANSWERS: Readonly<Record<string, { status: number; message: string }>> = {
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, message: 'Client Timeout' },
  HPE_HEADER_OVERFLOW: { status: 431, message: 'Exceeded maximum allowed HTTP header size' },
};

/** fastify's `clientErrorHandler`. */
export function onClientError(err: Error & { code?: string }, socket: Socket): void {
  // A reset connection is gone already; nothing to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable && socket.bytesWritten === 0) {
    const { status, message } = ANSWERS[err.code ?? ''] ?? { status: 400, message: 'Client Error' };
    const error = STATUS_CODES[status] ?? 'Error';
    const body = JSON.stringify({ error, message, statusCode: status });
    socket.write(
      `HTTP/1.1 ${status} ${error}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Content-Type: application/json\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
