/**
 * A packet the NetworkPolicy enforcer dropped, as the drop reporter reads it from the NFLOG helper
 * (test-e2e/images/src/sandbox-nflog.c) and sends it to the audit service (POST /v1/drops):
 * the one shape both ends validate, field by field, before anything trusts it. A dropped packet
 * is a sandbox's direct connection that skipped the egress proxy (docs/egress.md, "Direct
 * connections in the audit"); its bytes were chosen by the sandbox, so nothing here is trusted.
 */
import { isIP } from 'node:net';

/** Protocols the helper names (ICMP and ICMPv6 are both `icmp`). */
export const DROP_PROTOS = ['tcp', 'udp', 'icmp', 'other'] as const;
export type DropProto = (typeof DROP_PROTOS)[number];

/** One dropped packet: addresses in their printed form, ports only for TCP and UDP. */
export interface DroppedPacket {
  src: string;
  dst: string;
  proto: DropProto;
  sport?: number;
  dport?: number;
}

/** A dropped packet on the wire to the audit service: how long ago the reporter read it. */
export interface WireDrop extends DroppedPacket {
  /** Milliseconds between reading the packet and sending it, 0..DROP_MAX_AGE_MS. */
  ageMs: number;
}

/** Oldest drop the reporter sends and the service accepts, ms (a batch retried this long is dropped). */
export const DROP_MAX_AGE_MS = 10 * 60_000;

const PROTOS = new Set<string>(DROP_PROTOS);
/** A printed IPv4 or IPv6 address (no zone: the helper prints none). */
const isAddress = (v: unknown): v is string =>
  typeof v === 'string' && v.length <= 45 && !v.includes('%') && isIP(v) !== 0;
const isPort = (v: unknown): v is number =>
  Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 65535;

/**
 * The drop in `value`, or why it is refused. `extra` names the keys allowed besides the packet's
 * own (the wire's ageMs); any other key refuses it.
 */
export function checkDrop(value: unknown, extra: readonly string[] = []): DroppedPacket | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not an object';
  const v = value as Record<string, unknown>;
  const unknownKey = Object.keys(v).find(
    (k) => !['src', 'dst', 'proto', 'sport', 'dport'].includes(k) && !extra.includes(k),
  );
  if (unknownKey !== undefined) return `unknown field ${unknownKey.slice(0, 32)}`;
  if (!isAddress(v.src)) return 'src';
  if (!isAddress(v.dst)) return 'dst';
  if (typeof v.proto !== 'string' || !PROTOS.has(v.proto)) return 'proto';
  const proto = v.proto as DropProto;
  const ports = checkPorts(v, proto);
  return typeof ports === 'string' ? ports : { src: v.src, dst: v.dst, proto, ...ports };
}

/** The ports of a TCP or UDP drop (both required), none for the others (none allowed). */
function checkPorts(
  v: Record<string, unknown>,
  proto: DropProto,
): { sport?: number; dport?: number } | string {
  if (proto !== 'tcp' && proto !== 'udp') {
    return v.sport !== undefined || v.dport !== undefined ? 'ports without tcp or udp' : {};
  }
  if (!isPort(v.sport)) return 'sport';
  if (!isPort(v.dport)) return 'dport';
  return { sport: v.sport, dport: v.dport };
}

/** The wire drop in `value`, or why it is refused. */
export function checkWireDrop(value: unknown): WireDrop | string {
  const drop = checkDrop(value, ['ageMs']);
  if (typeof drop === 'string') return drop;
  const age = (value as Record<string, unknown>).ageMs;
  if (!Number.isInteger(age) || (age as number) < 0 || (age as number) > DROP_MAX_AGE_MS) return 'ageMs';
  return { ...drop, ageMs: age as number };
}
