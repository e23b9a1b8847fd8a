// Which addresses the sidecar's HTTP tools may connect to. The policy decides on the host (permission, taint gate,
// target-scoped rules); this decides on the address the host resolves to, at the moment of connecting, so a name
// that resolved to a public address when it was checked and to 127.0.0.1 a second later (DNS rebinding) is caught
// on the address actually used. Local addresses (loopback, private, link-local and cloud metadata, shared CGNAT,
// multicast, reserved) are refused unless the policy's `allowLocalNetwork` (upstream's allow_local_network) is on.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import { BlockList, isIP } from "node:net";

const LOCAL_V4: readonly [string, number][] = [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12],
  ["192.0.0.0", 24], ["192.0.2.0", 24], ["192.88.99.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["198.51.100.0", 24],
  ["203.0.113.0", 24], ["224.0.0.0", 4], ["240.0.0.0", 4],
];
const LOCAL_V6: readonly [string, number][] = [
  ["::", 128], ["::1", 128], ["64:ff9b:1::", 48], ["100::", 64], ["2001:db8::", 32], ["fc00::", 7], ["fe80::", 10], ["fec0::", 10], ["ff00::", 8],
];

const LOCAL = new BlockList();
for (const [net, prefix] of LOCAL_V4) LOCAL.addSubnet(net, prefix, "ipv4");
for (const [net, prefix] of LOCAL_V6) LOCAL.addSubnet(net, prefix, "ipv6");

/** The IPv4 address an IPv6 one embeds (`::ffff:a.b.c.d`, `::ffff:7f00:1`, NAT64 `64:ff9b::a.b.c.d`), if any. */
function embeddedV4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const prefix = ["::ffff:", "64:ff9b::"].find((p) => lower.startsWith(p));
  if (prefix === undefined) return undefined;
  const rest = lower.slice(prefix.length);
  if (isIP(rest) === 4) return rest;
  const m = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(rest);
  if (m === null) return undefined;
  const hi = parseInt(m[1]!, 16);
  const lo = parseInt(m[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether an IP address is local (see above); anything that is not an IP address counts as local (fail closed). */
export function isLocalAddress(address: string): boolean {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 4) return LOCAL.check(bare, "ipv4");
  if (family !== 6) return true;
  const v4 = embeddedV4(bare);
  return v4 !== undefined ? LOCAL.check(v4, "ipv4") : LOCAL.check(bare, "ipv6");
}

/** A connection refused because its address is local. */
export class LocalAddressError extends Error {
  override readonly name = "LocalAddressError";
  readonly host: string;
  readonly address: string;
  /** A refused address with its host. */
  constructor(host: string, address: string) {
    super(`${host} resolves to ${address}, a local address`);
    this.host = host;
    this.address = address;
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for node:http that resolves as usual and fails with LocalAddressError when any address of the answer
 * is local (unless allowed): the connection is made only to the addresses checked here.
 */
export function createGuardedLookup(allowLocal: boolean): (host: string, opts: LookupOptions, cb: LookupCallback) => void {
  return (host, opts, cb) => {
    dnsLookup(host, { ...opts, all: true }, (err, addresses) => {
      if (err !== null) return cb(err, []);
      const local = allowLocal ? undefined : addresses.find((a) => isLocalAddress(a.address));
      if (local !== undefined) return cb(new LocalAddressError(host, local.address) as NodeJS.ErrnoException, []);
      if (opts.all === true) return cb(null, addresses);
      const first = addresses[0];
      if (first === undefined) return cb(Object.assign(new Error(`no address for ${host}`), { code: "ENOTFOUND" }), []);
      cb(null, first.address, first.family);
    });
  };
}

/** The refusal of a literal IP host before any connection (a literal is never looked up), if it is local and not allowed. */
export function checkLiteralHost(host: string, allowLocal: boolean): LocalAddressError | undefined {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  if (allowLocal || isIP(bare) === 0) return undefined;
  return isLocalAddress(bare) ? new LocalAddressError(host, bare) : undefined;
}
