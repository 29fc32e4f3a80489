/**
 * The API server's request counters (apiserver_request_total from its /metrics), so a window can
 * be reported as "which calls reached the API server": the operator path's extra calls (status
 * writes, events, watches) are what it costs beyond the direct baseline.
 */
import https from 'node:https';

import type * as k8s from '@kubernetes/client-node';

/** verb+resource -> count. */
export type RequestCounts = Map<string, number>;

/** A snapshot of apiserver_request_total summed over codes, by "VERB resource[/subresource]". */
export async function requestCounts(kc: k8s.KubeConfig): Promise<RequestCounts> {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('kubeconfig has no current cluster');
  const opts: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  const body = await new Promise<string>((resolve, reject) => {
    const req = https.get(`${server}/metrics`, opts, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve(text));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  const out: RequestCounts = new Map();
  for (const m of body.matchAll(/^apiserver_request_total\{([^}]*)\} (\S+)$/gm)) {
    const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    const key = `${labels.verb} ${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''}`;
    out.set(key, (out.get(key) ?? 0) + Number(m[2]));
  }
  return out;
}

/** The calls made between two snapshots, most frequent first, as "VERB resource N" joined by commas. */
export function requestDelta(before: RequestCounts, after: RequestCounts): string {
  return [...after]
    .map(([k, n]) => [k, n - (before.get(k) ?? 0)] as const)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
}
