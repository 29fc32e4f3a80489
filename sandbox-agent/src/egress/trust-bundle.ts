/**
 * The egress trust bundle (docs/egress.md, ADR 0034). Behind the platform's egress proxy, HTTPS
 * from the sandbox is re-signed with the namespace's interception CA, and the Pod's SSL_CERT_FILE,
 * CURL_CA_BUNDLE, REQUESTS_CA_BUNDLE, GIT_SSL_CAINFO and PIP_CERT all name one file
 * (EGRESS_TRUST_BUNDLE). Those variables replace a tool's trust store rather than add to it, so
 * the file holds both: the image's public CAs (the system bundle), then the interception CA.
 *
 * - The CA comes from an optional ConfigMap the proxy publishes: absent when the Pod starts,
 *   appearing later, or rotated, and the kubelet swaps the mounted file for a new one (a symlink
 *   swap, a new inode). So the agent polls: a stat of the CA and the system bundle every few
 *   seconds, and a rebuild only when one changed (device, inode, size, mtime) or went away. The
 *   bundle's own stamp is checked too, so a bundle deleted or edited in the sandbox comes back.
 * - A reader never sees a half-written bundle: it is written to a temp file in its directory and
 *   renamed over the old one, whose inode (and a reader holding it open) is left as it was.
 * - A bad CA never stops the agent: one that is too large or holds no whole PEM certificate is
 *   left out (one warn line per distinct problem, not one per poll), and the bundle then holds the
 *   public CAs alone. Only the CA's whole CERTIFICATE blocks are copied (never a key or a cut-off
 *   block next to them), so the bundle stays parseable.
 * - Reads are bounded: 64 KiB of CA, 4 MiB of system bundle (a longer one is cut after its last
 *   whole certificate). Files are opened O_NONBLOCK and must be regular files, so a FIFO or a
 *   device in their place cannot hang or flood the agent.
 * - Only the first build can fail the start (the bundle must exist once the agent is ready); a
 *   later write failure is logged and retried at the next poll.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  type BigIntStats,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

import { errorMessage, type Logger } from '../log.js';

/** Largest CA file used; a larger one is left out. */
export const CA_MAX_BYTES = 64 * 1024;
/** Most bytes of the system bundle read; a longer one is cut after its last whole certificate. */
export const SYSTEM_BUNDLE_MAX_BYTES = 4 * 1024 * 1024;
/** The image's public CAs (Debian's ca-certificates). */
export const DEFAULT_SYSTEM_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
/** Default poll interval of the CA and the system bundle. */
export const DEFAULT_TRUST_BUNDLE_INTERVAL_MS = 5000;

/** Where the bundle comes from and goes to; see {@link startTrustBundle}. */
export interface TrustBundleOptions {
  /** The interception CA (PEM); may be absent, appear and change at any time. */
  caFile: string;
  /** The bundle to keep current (EGRESS_TRUST_BUNDLE in production). */
  bundleFile: string;
  /** The public CAs put first (default {@link DEFAULT_SYSTEM_BUNDLE}). */
  systemBundle?: string;
  /** Poll interval (default {@link DEFAULT_TRUST_BUNDLE_INTERVAL_MS}). */
  intervalMs?: number;
  logger: Logger;
}

/** A kept-current trust bundle. */
export interface TrustBundle {
  /** Rebuilds the bundle when an input (or the bundle) changed since the last build; true if it did. */
  refresh(): boolean;
  /** Stops polling; the bundle file stays. */
  close(): void;
}

/**
 * Builds the bundle now (synchronously; throws when it cannot be written), then keeps it current
 * with an unref'd poll every `intervalMs`.
 */
export function startTrustBundle(options: TrustBundleOptions): TrustBundle {
  const bundle = new Bundle(options);
  try {
    bundle.build();
  } catch (err) {
    throw new Error(`cannot write the egress trust bundle ${options.bundleFile}`, { cause: err });
  }
  const timer = setInterval(() => bundle.refresh(), options.intervalMs ?? DEFAULT_TRUST_BUNDLE_INTERVAL_MS);
  timer.unref();
  return { refresh: () => bundle.refresh(), close: () => clearInterval(timer) };
}

/** Identity of an input or the bundle as of one stat; compared with the next poll's. */
type Stamp = string;

/** Stamp of a path that does not exist. */
const ABSENT: Stamp = 'absent';

/** The stamps of the last build. */
interface Stamps {
  ca: Stamp;
  system: Stamp;
  bundle: Stamp;
}

/** What reading an input found: its text when usable, why not when there is a problem to tell. */
interface Input {
  stamp: Stamp;
  text?: string;
  problem?: string;
}

/** Whole PEM certificate blocks. */
const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

class Bundle {
  private readonly systemBundle: string;
  /** Undefined until the first successful write. */
  private stamps?: Stamps;
  /** The last problem warned about per input ('ca', 'system', 'write'); cleared once it is fine. */
  private readonly warned = new Map<string, string>();

  constructor(private readonly options: TrustBundleOptions) {
    this.systemBundle = options.systemBundle ?? DEFAULT_SYSTEM_BUNDLE;
  }

  refresh(): boolean {
    if (this.stamps && !this.changed(this.stamps)) return false;
    try {
      this.build();
      return true;
    } catch (err) {
      this.report('write', this.options.bundleFile, errorMessage(err));
      return false;
    }
  }

  /** Reads the inputs and writes the bundle; throws when it cannot be written. */
  build(): void {
    const { caFile, bundleFile, logger } = this.options;
    const ca = readCa(caFile);
    const system = readSystemBundle(this.systemBundle);
    this.report('ca', caFile, ca.problem);
    this.report('system', this.systemBundle, system.problem);
    const text = joinInputs(system.text, ca.text);
    const bundle = writeAtomically(bundleFile, text);
    this.stamps = { ca: ca.stamp, system: system.stamp, bundle };
    this.report('write', bundleFile, undefined);
    logger.info('egress trust bundle written', {
      caPresent: ca.text !== undefined,
      bytes: Buffer.byteLength(text, 'latin1'),
    });
  }

  private changed(last: Stamps): boolean {
    return (
      stampOf(this.options.caFile) !== last.ca ||
      stampOf(this.systemBundle) !== last.system ||
      stampOf(this.options.bundleFile) !== last.bundle
    );
  }

  /** Warns once per distinct problem of an input; `problem` undefined means it is fine again. */
  private report(input: string, file: string, problem: string | undefined): void {
    if (problem === undefined) {
      this.warned.delete(input);
      return;
    }
    if (this.warned.get(input) === problem) return;
    this.warned.set(input, problem);
    this.options.logger.warn('egress trust bundle problem', { input, file, problem });
  }
}

/** The system bundle, then the CA; either may be missing (an empty bundle when both are). */
function joinInputs(system: string | undefined, ca: string | undefined): string {
  if (system === undefined) return ca ?? '';
  return ca === undefined ? system : `${system}\n${ca}`;
}

/** The CA's whole certificate blocks; absent is no problem (the ConfigMap is optional). */
function readCa(file: string): Input {
  const read = readBounded(file, CA_MAX_BYTES);
  if (read.data === undefined) return read;
  if (read.data.length > CA_MAX_BYTES)
    return { stamp: read.stamp, problem: `larger than ${CA_MAX_BYTES} bytes` };
  const blocks = read.data.toString('latin1').match(CERTIFICATE_BLOCK);
  if (!blocks) return { stamp: read.stamp, problem: 'holds no PEM certificate' };
  return { stamp: read.stamp, text: `${blocks.join('\n')}\n` };
}

/** The system bundle as it is, cut after its last whole certificate when over the bound. */
function readSystemBundle(file: string): Input {
  const read = readBounded(file, SYSTEM_BUNDLE_MAX_BYTES);
  if (read.data === undefined) return read.problem ? read : { ...read, problem: 'missing' };
  const text = read.data.toString('latin1');
  if (read.data.length <= SYSTEM_BUNDLE_MAX_BYTES) return { stamp: read.stamp, text };
  const end = text.lastIndexOf('-----END CERTIFICATE-----', SYSTEM_BUNDLE_MAX_BYTES);
  return {
    stamp: read.stamp,
    text: end < 0 ? undefined : `${text.slice(0, end + '-----END CERTIFICATE-----'.length)}\n`,
    problem: `larger than ${SYSTEM_BUNDLE_MAX_BYTES} bytes: only its first whole certificates are used`,
  };
}

/** Up to `maxBytes` + 1 bytes of a regular file (one more than allowed tells it is too large). */
function readBounded(file: string, maxBytes: number): Input & { data?: Buffer } {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { stamp: ABSENT };
    return { stamp: stampOf(file), problem: `cannot open it: ${code ?? errorMessage(err)}` };
  }
  try {
    const info = fstatSync(fd, { bigint: true });
    const stamp = stampFrom(info);
    if (!info.isFile()) return { stamp, problem: 'not a regular file' };
    return { stamp, data: readUpTo(fd, maxBytes + 1) };
  } catch (err) {
    return { stamp: stampOf(file), problem: `cannot read it: ${errorMessage(err)}` };
  } finally {
    closeSync(fd);
  }
}

function readUpTo(fd: number, limit: number): Buffer {
  const buffer = Buffer.allocUnsafe(limit);
  let length = 0;
  while (length < limit) {
    const n = readSync(fd, buffer, length, limit - length, null);
    if (n === 0) break;
    length += n;
  }
  return buffer.subarray(0, length);
}

/** Writes `text` to a temp file beside `file` (mode 0644) and renames it over `file`; its stamp. */
function writeAtomically(file: string, text: string): Stamp {
  const dir = dirname(file);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const temp = join(dir, `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  let stamp: Stamp;
  // 'wx': a fresh file, never an existing one or what a symlink there points to.
  const fd = openSync(temp, 'wx', 0o644);
  try {
    try {
      fchmodSync(fd, 0o644); // whatever the umask
      writeFileSync(fd, text, 'latin1');
      stamp = stampFrom(fstatSync(fd, { bigint: true }));
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
  return stamp;
}

function stampFrom(info: BigIntStats): Stamp {
  return `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}`;
}

/** The stamp of `file` now, following symlinks as the reads do. */
function stampOf(file: string): Stamp {
  try {
    const info = statSync(file, { bigint: true, throwIfNoEntry: false });
    return info ? stampFrom(info) : ABSENT;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? ABSENT : `error:${code ?? errorMessage(err)}`;
  }
}
