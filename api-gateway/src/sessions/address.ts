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

/** True when the gateway may open connections to this pod IP. */
export function dialable(ip: string, policy: AddressPolicy): boolean {
  const family = isIP(ip);
  if (family === 0) return false;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (never.check(ip, type)) return false;
  return policy.allowLoopback || !loopback.check(ip, type);
}
