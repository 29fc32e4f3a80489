/**
 * Graceful close. fastify's close() stops accepting and closes connections that are idle at that
 * moment, but a keep-alive connection whose request was still running stays open after its
 * response until the keep-alive timeout (72 s), holding the process. While closing, every response
 * therefore says `Connection: close`, and connections that became idle are closed every second.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

const SWEEP_MS = 1000;

export default fp(
  (app: FastifyInstance, _opts: unknown, done: (err?: Error) => void) => {
    let closing = false;
    let sweep: NodeJS.Timeout | undefined;
    app.addHook('preClose', (hookDone: () => void) => {
      closing = true;
      sweep = setInterval(() => app.server.closeIdleConnections(), SWEEP_MS);
      sweep.unref();
      hookDone();
    });
    // A callback hook (not async): it runs on every response and must not add a promise hop.
    app.addHook(
      'onSend',
      (
        _request: FastifyRequest,
        reply: FastifyReply,
        payload: unknown,
        hookDone: (err: Error | null, payload: unknown) => void,
      ) => {
        if (closing && !reply.raw.headersSent) reply.header('connection', 'close');
        hookDone(null, payload);
      },
    );
    app.addHook('onClose', (_instance: FastifyInstance, hookDone: () => void) => {
      clearInterval(sweep);
      hookDone();
    });
    done();
  },
  { name: 'shutdown', fastify: '5.x' },
);
