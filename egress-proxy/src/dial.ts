/**
 * Where the proxy may connect: names resolve through the proxy's own resolver, and addresses in
 * blocked ranges (cloud metadata, loopback, the API server... chart value egressProxy.blockedCIDRs)
 * are never dialed, whatever a rule allows: a DNS name that resolves to 169.254.169.254 gets
 * nowhere. The check sits in the `lookup` hook of every connection the proxy opens (tunnels,
 * plain HTTP and intercepted HTTPS), so it applies to the addresses actually dialed.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIPv4, type LookupFunction } from 'node:net';

/** A BlockList of CIDRs (`a.b.c.d/n` or IPv6 `x::/n`). Throws on an invalid entry. */
export function blockList(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [addr, bits] = cidr.split('/');
    const prefix = Number(bits);
    if (!addr || !Number.isInteger(prefix)) throw new Error(`invalid CIDR ${JSON.stringify(cidr)}`);
    list.addSubnet(addr, prefix, isIPv4(addr) ? 'ipv4' : 'ipv6');
  }
  return list;
}

/** Thrown (as the lookup's error) when every address of a name is blocked. */
export class BlockedAddressError extends Error {
  readonly code = 'EGRESS_BLOCKED';
}

/** A `lookup` for net/http/https that resolves with the system resolver and drops blocked addresses. */
export function filteringLookup(blocked: BlockList, resolve: typeof dnsLookup = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses.filter((a) => !blocked.check(a.address, a.family === 6 ? 'ipv6' : 'ipv4'));
      if (list.length === 0) {
        return callback(new BlockedAddressError(`${hostname}: every address is blocked`), '', 0);
      }
      if ((options as { all?: boolean }).all)
        return (callback as (e: null, a: LookupAddress[]) => void)(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}
