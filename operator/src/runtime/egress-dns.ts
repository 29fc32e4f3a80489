/**
 * The address sandbox Pods use as their name server when they resolve through the egress proxy
 * (SANDBOX_EGRESS_DNS=proxy, docs/egress.md "DNS"): the proxy Service's, found by resolving the
 * host of SANDBOX_EGRESS_PROXY_URL once at start (a Service's address is fixed for its lifetime).
 * The operator does not start without it: a sandbox Pod built without it would query the cluster
 * DNS, which the sandbox NetworkPolicy does not admit, so resolution there would fail silently.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/** Options of the resolution; the defaults wait 60 s, trying once a second. */
export interface EgressDnsOptions {
  lookup?: (host: string) => Promise<{ address: string }>;
  attempts?: number;
  intervalMs?: number;
  onRetry?: (attempt: number, err: unknown) => void;
}

/** The IPv4 address of the proxy URL's host; throws after the last attempt. */
export async function resolveEgressDnsServer(proxyUrl: string, opts: EgressDnsOptions = {}): Promise<string> {
  const host = new URL(proxyUrl).hostname;
  if (isIP(host) === 4) return host;
  const lookup = opts.lookup ?? ((h: string) => dnsLookup(h, { family: 4 }));
  const attempts = opts.attempts ?? 60;
  for (let attempt = 1; ; attempt++) {
    try {
      return (await lookup(host)).address;
    } catch (err) {
      if (attempt >= attempts)
        throw new Error(`cannot resolve the egress proxy ${host} for sandbox DNS: ${String(err)}`);
      opts.onRetry?.(attempt, err);
      await new Promise((r) => setTimeout(r, opts.intervalMs ?? 1000));
    }
  }
}

/** The configuration's part of it: SANDBOX_EGRESS_DNS=proxy and the proxy's URL. */
export interface EgressDnsConfig {
  readonly egressDnsFromProxy: boolean;
  readonly pod: { readonly egressProxyUrl?: string };
}

/** The name server of sandbox Pods when they resolve through the proxy, else undefined (the cluster DNS). */
export async function egressDnsServerOf(
  config: EgressDnsConfig,
  onRetry: EgressDnsOptions['onRetry'],
): Promise<string | undefined> {
  if (!config.egressDnsFromProxy || !config.pod.egressProxyUrl) return undefined;
  return resolveEgressDnsServer(config.pod.egressProxyUrl, { onRetry });
}
