/**
 * The console's view of the gateway: where it is (the page is served at `<base>/console/`, so the
 * API is the parent of the page's folder, behind any path prefix), the client with the key, the
 * terminal's WebSocket address and subprotocols, and readable errors. Pure functions apart from
 * `createPreviewLink` (one fetch).
 */
import { GatewayError, SandboxClient, errorFromProblem, isSandboxError } from '@sandbox-platform/client';

/** The subprotocol the gateway selects for the console's terminal. */
export const CONSOLE_PROTOCOL = 'sandbox-console.v1';
/** Prefix of the subprotocol that carries the API key (a browser cannot set Authorization on a WebSocket). */
export const KEY_PROTOCOL_PREFIX = 'sandbox-key.';

/** The gateway's base URL for a page at `<base>/console/` (no trailing slash). */
export function gatewayBase(pageUrl: string): string {
  return new URL('../', pageUrl).href.replace(/\/+$/, '');
}

/** A WebSocket URL for a gateway path. */
export function webSocketUrl(base: string, path: string): string {
  const url = new URL(base + path);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return url.href;
}

/** base64url of a text's UTF-8 bytes (a subprotocol must be a token: no '+', '/' or '='). */
export function base64url(text: string): string {
  let binary = '';
  for (const b of new TextEncoder().encode(text)) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The subprotocols of the terminal's WebSocket. */
export function terminalProtocols(key: string): string[] {
  return [CONSOLE_PROTOCOL, KEY_PROTOCOL_PREFIX + base64url(key)];
}

/** A client of the gateway for a key (namespace: the key's default unless given). */
export function createClient(base: string, key: string, namespace: string | undefined): SandboxClient {
  return new SandboxClient({
    baseUrl: base,
    apiKey: key,
    ...(namespace ? { namespace } : {}),
    // A person watches: show the first answer rather than retrying behind their back.
    retry: { retries: 0 },
  });
}

/** One sentence for any failure, naming the problem's status and slug when the gateway answered. */
export function describeError(err: unknown): string {
  if (err instanceof GatewayError) return `${err.status} ${err.slug}: ${err.detail}`;
  if (isSandboxError(err)) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

/** The sign-in error: a refused key says so plainly. */
export function describeSignInError(err: unknown): string {
  if (err instanceof GatewayError && err.status === 401) {
    return `The API key was refused (${describeError(err)}). Check the key and sign in again.`;
  }
  if (err instanceof GatewayError && err.status === 403) {
    return `This API key may not use that namespace (${describeError(err)}).`;
  }
  return `Sign-in failed: ${describeError(err)}`;
}

/** A preview link as the gateway answers it. */
export interface PreviewLink {
  url: string;
  origin: string;
  expiresAt: string;
  port: number;
  session: string;
  namespace: string;
}

/** POST /v1/sessions/{name}/previews (the client has no call for it yet). */
export async function createPreviewLink(
  o: { base: string; key: string; namespace: string | undefined },
  session: string,
  body: { port: number; ttlSeconds?: number },
): Promise<PreviewLink> {
  const ns = o.namespace ? `?namespace=${encodeURIComponent(o.namespace)}` : '';
  const res = await fetch(`${o.base}/v1/sessions/${encodeURIComponent(session)}/previews${ns}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) {
    let problem: { type: string; title: string; status: number; detail?: string };
    try {
      problem = JSON.parse(text) as typeof problem;
    } catch {
      problem = { type: 'about:blank', title: text.slice(0, 200), status: res.status };
    }
    throw errorFromProblem(res.status, problem, res.headers.get('retry-after'));
  }
  return JSON.parse(text) as PreviewLink;
}
