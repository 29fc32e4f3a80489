/**
 * One `POST {command: "true"}` over a keep-alive pool, used for both the direct agent calls and
 * the gateway calls, so the client side costs the same in every mode.
 */
import http from 'node:http';

/**
 * A 429 from the gateway (its per-key limits): not a failure of the mode. The measuring loop
 * (stats.ts) waits `retryAfterMs` and takes the sample again, and counts it.
 */
export class RateLimitedError extends Error {
  constructor(readonly retryAfterMs: number) {
    super(`answered 429; retry after ${retryAfterMs} ms`);
    this.name = 'RateLimitedError';
  }
}

/** Where to post and with which bearer token. */
export interface PostTarget {
  host: string;
  port: number;
  path: string;
  token: string;
}

/** A function running `true` that resolves when the response is complete and says exit 0. */
export function execTrueCall(t: PostTarget): { call: () => Promise<void>; close: () => void } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 4000 });
  const body = Buffer.from(JSON.stringify({ command: 'true', timeoutSeconds: 30 }));
  const headers = {
    authorization: `Bearer ${t.token}`,
    'content-type': 'application/json',
    'content-length': body.length,
  };
  const call = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = http.request(
        { host: t.host, port: t.port, method: 'POST', path: t.path, agent, headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString();
            if (res.statusCode === 429) {
              const seconds = Number(res.headers['retry-after'] ?? 1);
              return reject(new RateLimitedError(Number.isFinite(seconds) ? seconds * 1000 : 1000));
            }
            if (res.statusCode !== 200)
              return reject(new Error(`${t.path} answered ${res.statusCode}: ${text}`));
            const r = JSON.parse(text) as { exitCode: number };
            if (r.exitCode !== 0) return reject(new Error(`true exited ${r.exitCode}`));
            resolve();
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  return { call, close: () => agent.destroy() };
}

/** host and port of a URL (http only). */
export function hostPort(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port || 80) };
}
