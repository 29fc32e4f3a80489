/**
 * Helpers of the e2b specs: the official SDKs' options for the in-cluster gateway (E2B_API_URL is
 * the gateway's URL + /e2b, E2B_SANDBOX_URL + /e2b/envd), from the e2e setup's variables.
 */
function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`the e2b specs need ${name} from the e2e setup`);
  return value;
}

export const GATEWAY = env('E2E_GATEWAY_URL');
export const KEY = env('E2E_GATEWAY_API_KEY');
export const OTHER_KEY = env('E2E_OTHER_API_KEY');
export const API_URL = `${GATEWAY}/e2b`;
export const SANDBOX_URL = `${GATEWAY}/e2b/envd`;

/** The SDK options of a key (a sandbox waits for its Pod, and a persistent workspace, at create). */
export function opts(apiKey: string = KEY): {
  apiKey: string;
  apiUrl: string;
  sandboxUrl: string;
  requestTimeoutMs: number;
} {
  return { apiKey, apiUrl: API_URL, sandboxUrl: SANDBOX_URL, requestTimeoutMs: 150_000 };
}

/** Polls `check` until it holds (SDK callbacks and watch events arrive asynchronously). */
export async function eventually(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
