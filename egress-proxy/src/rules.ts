/**
 * Egress rules: which host, port, method and path a session may reach. Pure: no I/O, table-tested.
 *
 * A rule's host is a lowercase DNS name (`pypi.org`) or `*.` and a suffix (`*.pythonhosted.org`:
 * any name strictly below it). Hosts are compared after lowercasing and dropping one trailing dot;
 * an IP literal never matches a rule (rules name hosts, so a sandbox cannot reach an address by
 * writing it as a host). A rule with methods, path prefixes or injected headers must see each
 * request: for HTTPS the proxy then terminates TLS (`intercept`).
 */
import type { SandboxSessionSpec } from '@sandbox-platform/api';
import { isIP } from 'node:net';

/** spec.egress of a session. */
export type EgressSpec = NonNullable<SandboxSessionSpec['egress']>;
/** One rule of spec.egress (also the shape of the namespace defaults). */
export type EgressRule = NonNullable<EgressSpec['rules']>[number];

/** Ports a rule without `ports` allows. */
export const DEFAULT_PORTS: readonly number[] = [80, 443];

/** What the proxy decided for a host and port. */
export type HostDecision =
  | { allowed: true; rule: EgressRule; intercept: boolean }
  | { allowed: false; reason: 'no-rule' | 'ip-literal' | 'invalid-host' };

/** What the proxy decided for one request (plain HTTP, or inside intercepted TLS). */
export type RequestDecision = { allowed: true } | { allowed: false; reason: 'method' | 'path' };

/** Dot segments, encoded dots or slashes, backslashes: paths an upstream may resolve elsewhere. */
const AMBIGUOUS_PATH = /(^|\/)\.\.?(\/|$)|%2e|%2f|%5c|\\/i;

const HOST_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The host as rules compare it: lowercase, one trailing dot dropped; undefined when not a DNS name. */
export function normalizeHost(host: string): string | undefined {
  let h = host.toLowerCase();
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h.length > 0 && h.length <= 253 && HOST_RE.test(h) ? h : undefined;
}

/** True when `pattern` (a rule's host) matches the normalized `host`. */
export function hostMatches(pattern: string, host: string): boolean {
  if (pattern.startsWith('*.')) {
    const suffix = pattern.slice(1); // ".example.com"
    return host.length > suffix.length && host.endsWith(suffix);
  }
  return pattern === host;
}

/** True when the rule needs to see each request (so HTTPS to its host is intercepted). */
export function needsRequests(rule: EgressRule): boolean {
  return Boolean(rule.methods?.length || rule.pathPrefixes?.length || rule.injectHeaders?.length);
}

/**
 * The first rule allowing `host`:`port`, preferring one that needs requests (so a credential rule
 * is never bypassed by a broader rule for the same host that would tunnel TLS untouched).
 */
export function decideHost(rules: readonly EgressRule[], host: string, port: number): HostDecision {
  if (isIP(host.replace(/^\[|\]$/g, '')) !== 0) return { allowed: false, reason: 'ip-literal' };
  const h = normalizeHost(host);
  if (h === undefined) return { allowed: false, reason: 'invalid-host' };
  const matching = rules.filter((r) => hostMatches(r.host, h) && (r.ports ?? DEFAULT_PORTS).includes(port));
  const rule = matching.find(needsRequests) ?? matching[0];
  if (!rule) return { allowed: false, reason: 'no-rule' };
  return { allowed: true, rule, intercept: needsRequests(rule) };
}

/** Most host decisions a DecisionCache keeps per rule set (a sandbox may ask for any host). */
export const DECISIONS_PER_RULE_SET = 1024;

/**
 * decideHost, remembered per rule set (the array's identity) and host:port. A session's rules are
 * one array until they change (kube/session-index.ts), so a changed rule set is a new array and
 * is decided afresh; the old one's decisions go with it (a WeakMap). Each rule set keeps at most
 * DECISIONS_PER_RULE_SET decisions: past that its cache is emptied and starts again.
 */
export class DecisionCache {
  private readonly byRules = new WeakMap<readonly EgressRule[], Map<string, HostDecision>>();

  decide(rules: readonly EgressRule[], host: string, port: number): HostDecision {
    let decisions = this.byRules.get(rules);
    if (decisions === undefined) {
      decisions = new Map();
      this.byRules.set(rules, decisions);
    }
    const key = `${port} ${host}`;
    let decision = decisions.get(key);
    if (decision === undefined) {
      decision = decideHost(rules, host, port);
      if (decisions.size >= DECISIONS_PER_RULE_SET) decisions.clear();
      decisions.set(key, decision);
    }
    return decision;
  }
}

/** Whether the rule allows a request with this method and path (the path without the query). */
export function decideRequest(rule: EgressRule, method: string, path: string): RequestDecision {
  if (rule.methods?.length && !rule.methods.includes(method as never)) {
    return { allowed: false, reason: 'method' };
  }
  if (rule.pathPrefixes?.length) {
    const p = path.split('?')[0] ?? '';
    // A prefix check means nothing for a path the upstream normalizes elsewhere (/simple/../admin).
    if (AMBIGUOUS_PATH.test(p)) return { allowed: false, reason: 'path' };
    if (!rule.pathPrefixes.some((prefix) => p.startsWith(prefix))) return { allowed: false, reason: 'path' };
  }
  return { allowed: true };
}

/** A session's effective rules: its own, then the namespace defaults unless it opted out. */
export function effectiveRules(
  spec: EgressSpec | undefined,
  namespaceDefaults: readonly EgressRule[],
): EgressRule[] {
  const own = spec?.rules ?? [];
  const inherit = spec?.inheritNamespaceDefaults ?? true;
  return inherit ? [...own, ...namespaceDefaults] : [...own];
}
