/**
 * The gateway's session lookup as a client sees it: `GET /v1/sessions/<name>` through the bench
 * release's gateway Service, one call at a time on a keep-alive connection, paced under the
 * chart's per-key rate limit (100 per second), over names spread across the namespace. Served from
 * the gateway's session cache, so its latency at 10 and at 10,000 sessions shows what the cache's
 * size costs a lookup.
 */
import http from 'node:http';

/** Latencies of successful lookups (ms, sorted) and the failures. */
export interface Lookups {
  readonly latencies: number[];
  readonly failures: number;
  readonly firstError?: string;
}

/** `samples` lookups of the given names in turn, `gapMs` apart. */
export async function lookups(
  base: URL,
  apiKey: string,
  namespace: string,
  names: readonly string[],
  opts: { readonly samples: number; readonly gapMs: number },
): Promise<Lookups> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  let failures = 0;
  let firstError: string | undefined;
  try {
    for (let i = 0; i < opts.samples; i++) {
      const name = names[(i * 7919) % names.length]!;
      const t0 = performance.now();
      const status = await get(base, `/v1/sessions/${name}?namespace=${namespace}`, apiKey, agent).catch(
        (err: unknown) => (err instanceof Error ? err.message : String(err)),
      );
      const ms = performance.now() - t0;
      if (status === 200) latencies.push(ms);
      else {
        failures++;
        firstError ??= `GET ${name}: ${status}`;
      }
      await new Promise((r) => setTimeout(r, opts.gapMs));
    }
  } finally {
    agent.destroy();
  }
  latencies.sort((a, b) => a - b);
  return { latencies, failures, firstError };
}

function get(base: URL, path: string, apiKey: string, agent: http.Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: base.hostname, port: base.port, path, agent, headers: { authorization: `Bearer ${apiKey}` } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', reject);
  });
}
