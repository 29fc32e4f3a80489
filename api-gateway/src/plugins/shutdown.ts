/**
 * Graceful shutdown in two steps.
 *
 * Drain (`app.drain(ms)`): /readyz answers 503 and every response says `Connection: close`, but the
 * listener stays open for `ms`. A Pod that is being deleted leaves the Service's endpoints only when
 * kube-proxy on every node has caught up (1-3 s measured on the local node); a gateway that stopped
 * listening at once would have new connections DNATed to its dead address until then, and a SYN
 * sent there keeps its conntrack entry, so the client waits for the TCP connect timeout (seen:
 * 3-134 s after a `helm upgrade`). Same idea as kube-apiserver's --shutdown-delay-duration.
 *
 * Close: fastify's close() stops accepting and closes connections that are idle at that
 * moment, but a keep-alive connection whose request was still running stays open after its
 * response until the keep-alive timeout (72 s), holding the process. While closing, every response
 * therefore says `Connection: close`, and connections that became idle are closed every second.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyInstance {
    /** True from the first signal on: /readyz fails while connections are still served. */
    draining(): boolean;
    /** Starts draining and resolves after `ms`; close() comes after. */
    drain(ms: number): Promise<void>;
  }
}

const SWEEP_MS = 1000;

export default fp(
  (app: FastifyInstance, _opts: unknown, done: (err?: Error) => void) => {
    let closing = false;
    let draining = false;
    let sweep: NodeJS.Timeout | undefined;
    app.decorate('draining', () => draining);
    app.decorate('drain', (ms: number): Promise<void> => {
      draining = true;
      return new Promise((resolve) => setTimeout(resolve, ms));
    });
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
        if ((closing || draining) && !reply.raw.headersSent) reply.header('connection', 'close');
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
