/** Reading client-node's ApiException without depending on its class identity. */

/** HTTP status of a failed Kubernetes API call, if it was one. */
export function apiStatus(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
}

/** The `message` of the Status object an API error carried (safe to show: it is about the request). */
export function apiMessage(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  let body = (err as { body?: unknown }).body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  const message = (body as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? message : undefined;
}
