/**
 * Sessions as the E2B control API shows sandboxes (its OpenAPI schemas Sandbox, SandboxDetail
 * and ListedSandbox). Pure.
 */
import type { SandboxSession } from '@sandbox-platform/api';

import { sandboxId, type SandboxRef } from '../ids.js';
import { endAt, onTimeoutOf, timeMs } from './lifecycle.js';
import { templateOf } from './templates.js';

/**
 * The envd version the gateway reports. The SDKs gate features on it: 0.5.7 turns on stdin, the
 * default user, closeStdin and octet-stream uploads, and leaves off what the gateway does not do
 * (file metadata from 0.6.2, entry info in watch events from 0.6.3, network-mount watches from
 * 0.6.4), which the SDKs then refuse themselves with a clear error.
 */
export const ENVD_VERSION = '0.5.7';
/** The deprecated clientID every answer must carry. */
export const CLIENT_ID = 'sandbox-platform';
/** Annotation holding a sandbox's E2B metadata (a JSON object of strings). */
export const METADATA_ANNOTATION = 'e2b.sandbox.dev/metadata';

/** The create / connect answer. */
export interface SandboxAnswer {
  templateID: string;
  sandboxID: string;
  alias: string;
  clientID: string;
  envdVersion: string;
  envdAccessToken: string;
  trafficAccessToken: null;
  domain: null;
}

/** A sandbox in a list. */
export interface ListedAnswer {
  templateID: string;
  alias: string;
  sandboxID: string;
  clientID: string;
  startedAt: string;
  endAt: string;
  cpuCount: number;
  memoryMB: number;
  diskSizeMB: number;
  metadata: Record<string, string>;
  state: 'running' | 'paused';
  envdVersion: string;
  volumeMounts: never[];
}

/** One sandbox in detail. */
export interface DetailAnswer extends ListedAnswer {
  envdAccessToken: string;
  domain: null;
  allowInternetAccess: null;
  lifecycle: { autoResume: boolean; onTimeout: 'kill' | 'pause' };
}

function refOf(s: SandboxSession): SandboxRef {
  return { namespace: s.metadata.namespace ?? '', name: s.metadata.name ?? '' };
}

/** The sandbox's E2B metadata (from its annotation; anything malformed reads as none). */
export function metadataOf(s: SandboxSession): Record<string, string> {
  const raw = s.metadata.annotations?.[METADATA_ANNOTATION];
  if (!raw) return {};
  try {
    const v: unknown = JSON.parse(raw);
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return {};
    return Object.fromEntries(
      Object.entries(v).filter((e): e is [string, string] => typeof e[1] === 'string'),
    );
  } catch {
    return {};
  }
}

function quantity(q: unknown): string {
  return typeof q === 'number' ? String(q) : typeof q === 'string' ? q : '';
}

/** CPUs of a quantity ("2", "500m"), rounded up; 0 when absent or unreadable. */
export function cpuCount(q: unknown): number {
  const s = quantity(q);
  const m = /^(\d+(?:\.\d+)?)(m?)$/.exec(s);
  if (!m) return 0;
  const cores = Number(m[1]) / (m[2] === 'm' ? 1000 : 1);
  return Math.ceil(cores);
}

const UNITS: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
};

/** MiB of a memory quantity ("512Mi", "1G"); 0 when absent or unreadable. */
export function memoryMB(q: unknown): number {
  const m = /^(\d+(?:\.\d+)?)([kMGT]i?|)$/.exec(quantity(q));
  const unit = m ? UNITS[m[2]!] : undefined;
  return m && unit !== undefined ? Math.round((Number(m[1]) * unit) / 1024 ** 2) : 0;
}

/** The create / connect answer of a session. */
export function sandboxAnswer(s: SandboxSession, accessToken: string): SandboxAnswer {
  const template = templateOf(s.spec);
  return {
    templateID: template,
    sandboxID: sandboxId(refOf(s)),
    alias: template,
    clientID: CLIENT_ID,
    envdVersion: ENVD_VERSION,
    envdAccessToken: accessToken,
    trafficAccessToken: null,
    domain: null,
  };
}

/** A session in a list. */
export function listedAnswer(s: SandboxSession, now: number): ListedAnswer {
  const template = templateOf(s.spec);
  const limits = (s.spec.resources as { limits?: { cpu?: unknown; memory?: unknown } } | undefined)?.limits;
  return {
    templateID: template,
    alias: template,
    sandboxID: sandboxId(refOf(s)),
    clientID: CLIENT_ID,
    startedAt: new Date(
      Number.isFinite(timeMs(s.metadata.creationTimestamp)) ? timeMs(s.metadata.creationTimestamp) : now,
    ).toISOString(),
    endAt: endAt(s, now).toISOString(),
    cpuCount: cpuCount(limits?.cpu),
    memoryMB: memoryMB(limits?.memory),
    diskSizeMB: 0,
    metadata: metadataOf(s),
    state: s.spec.suspend === true ? 'paused' : 'running',
    envdVersion: ENVD_VERSION,
    volumeMounts: [],
  };
}

/** One session in detail. Sessions resume on their next call: autoResume is always true. */
export function detailAnswer(s: SandboxSession, accessToken: string, now: number): DetailAnswer {
  return {
    ...listedAnswer(s, now),
    envdAccessToken: accessToken,
    domain: null,
    allowInternetAccess: null,
    lifecycle: { autoResume: true, onTimeout: onTimeoutOf(s) },
  };
}
