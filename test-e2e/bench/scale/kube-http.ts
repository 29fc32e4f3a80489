/**
 * The bench's minimal Kubernetes client: JSON over keep-alive HTTPS with the kubeconfig's client
 * certificate, one socket per worker, nothing else (no retries, no rate limit, no object model).
 * Both sides of the comparison create through it: the floor's bare Secrets and Pods, and the
 * SandboxSessions whose Secrets and Pods the operator then creates; so the client costs the same
 * on both sides and what differs is the platform.
 */
import https from 'node:https';

import type * as k8s from '@kubernetes/client-node';

/** An answer that was not 2xx. */
export class KubeHttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    what: string,
  ) {
    super(`${what}: HTTP ${status}: ${body.slice(0, 300)}`);
    this.name = 'KubeHttpError';
  }
}

/** A keep-alive JSON client for one API server. */
export class KubeHttp {
  private constructor(
    private readonly server: URL,
    private readonly options: https.RequestOptions,
  ) {}

  /** A client from the kubeconfig's current context, with at most `sockets` connections. */
  static async from(kc: k8s.KubeConfig, sockets: number): Promise<KubeHttp> {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    const options: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(options);
    options.agent = new https.Agent({
      keepAlive: true,
      maxSockets: sockets,
      ca: options.ca,
      cert: options.cert,
      key: options.key,
    });
    return new KubeHttp(new URL(cluster.server), options);
  }

  /** POSTs `body` to `path`; resolves with the parsed answer. */
  post(path: string, body: unknown): Promise<unknown> {
    return this.request('POST', path, body);
  }

  /** GETs `path`; resolves with the parsed answer. */
  get(path: string): Promise<unknown> {
    return this.request('GET', path);
  }

  /** DELETEs `path` (a collection with a query, or one object); 404 counts as done. */
  async delete(path: string, body?: unknown): Promise<void> {
    try {
      await this.request('DELETE', path, body);
    } catch (err) {
      if (!(err instanceof KubeHttpError && err.status === 404)) throw err;
    }
  }

  /** Ends the keep-alive connections. */
  close(): void {
    (this.options.agent as https.Agent).destroy();
  }

  private request(method: string, path: string, body?: unknown): Promise<unknown> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = https.request(
        {
          ...this.options,
          method,
          host: this.server.hostname,
          port: this.server.port || 443,
          path,
          headers: {
            accept: 'application/json',
            ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            if (status < 200 || status >= 300)
              return reject(new KubeHttpError(status, text, `${method} ${path}`));
            try {
              resolve(text ? JSON.parse(text) : undefined);
            } catch (err) {
              reject(new Error(`${method} ${path}: answer is not JSON`, { cause: err }));
            }
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }
}
