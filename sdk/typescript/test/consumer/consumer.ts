// A strict consumer of the packed package: compiled by mk/sdk.mk with tsconfig.node.json (Node
// types, NodeNext) and tsconfig.dom.json (DOM lib only, bundler resolution: a browser or Deno
// project) to show the declarations stand on their own. Never run.
import {
  GatewayClient,
  GatewayError,
  NotFoundError,
  SandboxClient,
  SandboxError,
  UnavailableError,
  decodeOutput,
  type ErrorCode,
  type ExecResult,
  type ExecStreamEvent,
  type Session,
} from '@sandbox-platform/client';

export async function tour(baseUrl: string, apiKey: string): Promise<number> {
  const client: SandboxClient = new SandboxClient({
    baseUrl,
    apiKey,
    namespace: 'team-a',
    retry: { retries: 1 },
  });
  const old: GatewayClient = new GatewayClient({ baseUrl, apiKey });
  const { session, created }: { session: Session; created: boolean } = await client.createSession({
    name: 'x',
  });
  const ready: Session = await old.waitUntilReady(session.name, { timeoutMs: 60_000 });
  const r: ExecResult = await client.exec(ready.name, { command: 'echo hi', timeoutSeconds: 5 });
  const bytes: Uint8Array = decodeOutput(r.stdout, r.stdoutEncoding);
  for await (const ev of client.execStream('x', { command: 'ls' })) {
    const e: ExecStreamEvent = ev;
    if (e.type === 'exit') return e.exitCode + bytes.length + (created ? 1 : 0);
  }
  await client.writeFile('x', 'a.txt', new Uint8Array([1, 2]), { signal: AbortSignal.timeout(1000) });
  const data: Uint8Array = await client.readFile('x', 'a.txt', 'team-a');
  return data.length;
}

export function describeError(err: unknown): string {
  if (err instanceof NotFoundError) return `missing: ${err.detail}`;
  if (err instanceof UnavailableError) return `retry in ${err.retryAfterSeconds ?? 0} s`;
  if (err instanceof GatewayError) {
    const code: ErrorCode = err.code;
    return `${code} ${err.status} ${err.problem.title} ${err.reason ?? ''}`;
  }
  if (err instanceof SandboxError) return err.code;
  return 'unknown';
}
