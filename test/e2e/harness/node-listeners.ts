// Servers the test process runs on the node's own address (the pods' gateway): a TCP listener and a
// DNS responder, so a pod's reach to the node and to a resolver can be tested both ways (a pod that is
// allowed gets through, so a pod that does not is refused by the data plane, not by an absent server).
import { createSocket } from "node:dgram";
import { createServer } from "node:net";

/** A server the test started; `close()` is idempotent. */
export type Listener = { port: number; close: () => Promise<void> };

/** Accepts TCP on `host:port` (0 for any free port) and answers every connection with `greeting`. */
export async function listenTcp(host: string, greeting: string, port = 0): Promise<Listener> {
  const server = createServer((socket) => socket.end(`${greeting}\n`));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("no TCP address");
  let closed = false;
  return {
    port: address.port,
    close: () => (closed ? Promise.resolve() : new Promise<void>((resolve) => { closed = true; server.close(() => resolve()); })),
  };
}

/**
 * A DNS responder on UDP `host:53` that answers every A query for `name` with `address` and every other
 * query with NXDOMAIN: enough for busybox `nslookup NAME SERVER`, nothing more.
 */
export async function listenDns(host: string, name: string, address: string): Promise<Listener> {
  const socket = createSocket("udp4");
  socket.on("message", (query, peer) => {
    const reply = buildDnsReply(query, name, address);
    if (reply) socket.send(reply, peer.port, peer.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.bind(53, host, () => resolve());
  });
  let closed = false;
  return {
    port: 53,
    close: () => (closed ? Promise.resolve() : new Promise<void>((resolve) => { closed = true; socket.close(() => resolve()); })),
  };
}

/** The reply to one query (RFC 1035 §4): the question echoed, one A record when it asks for `name`. */
export function buildDnsReply(query: Buffer, name: string, address: string): Buffer | undefined {
  if (query.length < 12) return undefined;
  const labels: string[] = [];
  let at = 12;
  while (at < query.length && query[at] !== 0) {
    const length = query[at]!;
    labels.push(query.subarray(at + 1, at + 1 + length).toString("ascii"));
    at += length + 1;
  }
  const questionEnd = at + 5;
  if (questionEnd > query.length) return undefined;
  const type = query.readUInt16BE(at + 1);
  const matches = labels.join(".").toLowerCase() === name.toLowerCase() && type === 1;
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2);
  // QR=1, opcode copied, RD copied, RA=1; RCODE 0 or 3 (NXDOMAIN).
  header.writeUInt16BE(0x8000 | (query.readUInt16BE(2) & 0x7900) | 0x0080 | (matches ? 0 : 3), 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(matches ? 1 : 0, 6);
  const question = query.subarray(12, questionEnd);
  if (!matches) return Buffer.concat([header, question]);
  const answer = Buffer.alloc(16);
  answer.writeUInt16BE(0xc00c, 0);
  answer.writeUInt16BE(1, 2);
  answer.writeUInt16BE(1, 4);
  answer.writeUInt32BE(60, 6);
  answer.writeUInt16BE(4, 10);
  address.split(".").forEach((octet, i) => answer.writeUInt8(Number(octet), 12 + i));
  return Buffer.concat([header, question, answer]);
}
