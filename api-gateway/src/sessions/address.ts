/**
 * Which pod addresses the gateway will dial. The address comes from the session's status (the
 * operator writes it), never from a client; as defense in depth against a tampered status (an
 * SSRF into the node or the cloud metadata service), only unicast IP literals outside link-local,
 * unspecified and multicast ranges are dialed, and loopback only when the configuration allows it
 * (tests run agents on 127.0.0.x).
 */
import { BlockList, isIP } from 'node:net';

/** Address rules from the configuration. */
export interface AddressPolicy {
  /** Dial 127.0.0.0/8 and ::1 (tests only). */
  allowLoopback: boolean;
}

/** The production rule. */
export const DEFAULT_ADDRESS_POLICY: AddressPolicy = { allowLoopback: false };

const never = new BlockList();
never.addSubnet('0.0.0.0', 8, 'ipv4'); // unspecified / "this network"
never.addSubnet('169.254.0.0', 16, 'ipv4'); // link-local, cloud metadata
never.addSubnet('224.0.0.0', 4, 'ipv4'); // multicast
never.addSubnet('240.0.0.0', 4, 'ipv4'); // reserved, broadcast
never.addAddress('::', 'ipv6');
never.addSubnet('fe80::', 10, 'ipv6'); // link-local
never.addSubnet('ff00::', 8, 'ipv6'); // multicast

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/**
 * Answers already computed, per loopback setting: every exec checks its session's pod IP, and a
 * BlockList check (it builds a SocketAddress) costs more than the rest of the readiness check. The
 * answer depends on nothing but the IP and the setting; the maps are cleared when they fill up.
 */
const known = [new Map<string, boolean>(), new Map<string, boolean>()] as const;
const KNOWN_MAX = 4096;

/** True when the gateway may open connections to this pod IP. */
export function dialable(ip: string, policy: AddressPolicy): boolean {
  const cache = known[policy.allowLoopback ? 1 : 0];
  let ok = cache.get(ip);
  if (ok === undefined) {
    ok = check(ip, policy);
    if (cache.size >= KNOWN_MAX) cache.clear();
    cache.set(ip, ok);
  }
  return ok;
}

function check(ip: string, policy: AddressPolicy): boolean {
  const family = isIP(ip);
  if (family === 0) return false;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (never.check(ip, type)) return false;
  return policy.allowLoopback || !loopback.check(ip, type);
}
