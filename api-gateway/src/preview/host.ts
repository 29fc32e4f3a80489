/**
 * Preview hosts: `{port}-{session}--{namespace}.<preview domain>`, one origin per sandbox port
 * (ADR 0032). Pure functions: the label of a preview, and what a request's Host names.
 */

/** A Kubernetes name as the gateway accepts it for sessions and namespaces (a DNS label). */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** The longest DNS label (RFC 1035): a preview host's first label must fit in one. */
export const MAX_LABEL_LENGTH = 63;

/** What a preview host names. */
export interface PreviewAddress {
  port: number;
  session: string;
  namespace: string;
}

/** The first label of a preview host. */
export function previewLabel(a: PreviewAddress): string {
  return `${a.port}-${a.session}--${a.namespace}`;
}

/**
 * The address a label names, or undefined when it names none or is ambiguous: the session and
 * the namespace are split at a `--` where both sides are DNS labels, and exactly one such split
 * may exist (names that hold `--` themselves may make a label ambiguous; such previews are
 * refused when the link is made, see `labelFor`).
 */
export function parseLabel(label: string): PreviewAddress | undefined {
  const m = /^([1-9][0-9]{0,4})-(.+)$/.exec(label);
  if (!m) return undefined;
  const port = Number(m[1]);
  if (port > 65535) return undefined;
  const rest = m[2]!;
  let found: PreviewAddress | undefined;
  for (let at = rest.indexOf('--'); at >= 0; at = rest.indexOf('--', at + 1)) {
    const session = rest.slice(0, at);
    const namespace = rest.slice(at + 2);
    if (!DNS_LABEL.test(session) || !DNS_LABEL.test(namespace)) continue;
    if (found) return undefined;
    found = { port, session, namespace };
  }
  return found;
}

/**
 * The label of a preview, or why it cannot have one: longer than a DNS label, or not read back as
 * the same address (ambiguous names).
 */
export function labelFor(a: PreviewAddress): { label: string } | { error: string } {
  const label = previewLabel(a);
  if (label.length > MAX_LABEL_LENGTH) {
    return {
      error: `the preview host label ${label} is ${label.length} characters; a DNS label holds at most ${MAX_LABEL_LENGTH} (use shorter session or namespace names)`,
    };
  }
  const back = parseLabel(label);
  if (!back || back.session !== a.session || back.namespace !== a.namespace) {
    return { error: `the preview host label ${label} is ambiguous: the names hold "--"` };
  }
  return { label };
}

/** What a request's Host header is, for the preview routing. */
export type HostKind =
  { kind: 'other' } | { kind: 'preview'; address: PreviewAddress } | { kind: 'invalid'; host: string };

/**
 * Classifies a Host header: a host under the preview domain is a preview host, `invalid` unless it
 * is one label naming a preview (so no host under the domain ever reaches the API or the console);
 * anything else (the API's own host, the bare domain) is `other`. The port of the Host header is
 * ignored. Case-insensitive.
 */
export function classifyHost(host: string | undefined, domain: string): HostKind {
  if (host === undefined) return { kind: 'other' };
  const name = stripPort(host).toLowerCase();
  if (name.length <= domain.length + 1 || !name.endsWith(domain)) return { kind: 'other' };
  if (name[name.length - domain.length - 1] !== '.') return { kind: 'other' };
  const label = name.slice(0, name.length - domain.length - 1);
  const address = label.includes('.') ? undefined : parseLabel(label);
  return address ? { kind: 'preview', address } : { kind: 'invalid', host: name.slice(0, 300) };
}

/** A Host header without its port (IPv6 literals keep their brackets). */
function stripPort(host: string): string {
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
  const colon = host.indexOf(':');
  return colon < 0 ? host : host.slice(0, colon);
}

/** The origin of a preview (scheme, host, and the port when it is not the scheme's default). */
export function previewOrigin(
  label: string,
  o: { domain: string; scheme: 'http' | 'https'; port: number },
): string {
  const defaultPort = o.scheme === 'https' ? 443 : 80;
  const port = o.port === 0 || o.port === defaultPort ? '' : `:${o.port}`;
  return `${o.scheme}://${label}.${o.domain}${port}`;
}
