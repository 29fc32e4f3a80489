/**
 * Every failure of the CLI becomes one line on stderr and an exit code, never a stack trace
 * (SBX_DEBUG=1 adds the stack for bug reports).
 */
import { AuthenticationError, ConnectionError, GatewayError, SandboxError } from '@sandbox-platform/client';

/** Exit codes of the CLI's own failures (exec passes the command's exit code through instead). */
export const EXIT = {
  /** The gateway refused or failed the call, or could not be reached. */
  error: 1,
  /** Bad command line or configuration. */
  usage: 2,
  /** Interrupted (Ctrl-C), as shells report SIGINT. */
  interrupted: 130,
} as const;

/** A mistake in the command line or configuration. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The one line printed for an error (without the program prefix). */
export function errorLine(err: unknown): string {
  if (err instanceof UsageError) return err.message;
  if (err instanceof AuthenticationError) {
    return `the gateway refused the API key (${err.code}): check --key, SANDBOX_KEY or the config file`;
  }
  if (err instanceof GatewayError) return gatewayLine(err);
  if (err instanceof ConnectionError) return err.message;
  if (err instanceof SandboxError) return `${err.message} (${err.code})`;
  if (isNodeError(err)) return fileError(err);
  return err instanceof Error ? err.message : String(err);
}

/** Exit code of an error. */
export function exitCodeOf(err: unknown): number {
  if (err instanceof UsageError) return EXIT.usage;
  if (err instanceof Error && err.name === 'AbortError') return EXIT.interrupted;
  return EXIT.error;
}

function gatewayLine(err: GatewayError): string {
  const retry = err.retryAfterSeconds !== undefined ? `; retry in ${err.retryAfterSeconds} s` : '';
  const reason = err.reason && !err.detail.includes(err.reason) ? ` [${err.reason}]` : '';
  return `${err.detail}${reason} (${err.code}, HTTP ${err.status}${retry})`;
}

interface NodeError extends Error {
  code: string;
  path?: string;
}

function isNodeError(err: unknown): err is NodeError {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'string';
}

/** Local file errors in words (ENOENT and friends carry the path). */
function fileError(err: NodeError): string {
  const where = err.path ? `${err.path}: ` : '';
  const what: Record<string, string> = {
    ENOENT: 'no such file or directory',
    EACCES: 'permission denied',
    EISDIR: 'is a directory',
    ENOTDIR: 'not a directory',
  };
  return `${where}${what[err.code] ?? err.message}`;
}
