/** What every view of a signed-in console gets. */
import type { SandboxClient } from '@sandbox-platform/client';

/** The signed-in console: the client, where the gateway is, and how to tell the person. */
export interface Ctx {
  client: SandboxClient;
  /** The gateway's base URL (no trailing slash). */
  base: string;
  /** The API key (from sessionStorage; sent only in headers). */
  key: string;
  /** The namespace chosen at sign-in; undefined: the key's default. */
  namespace: string | undefined;
  /** A status line (polite live region). */
  report(message: string): void;
  /** An error line (alert region); `undefined` clears it. */
  fail(err: unknown): void;
}

/** A mounted view: dispose() stops its timers, sockets and streams. */
export interface View {
  dispose(): void;
}
