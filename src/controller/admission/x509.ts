// Issues the webhook's certificates: a self-signed CA and a serving certificate it signs, ECDSA P-256 with SHA-256.
// Node's crypto parses X.509 but cannot issue it, and no certificate library is among our dependencies, so the few
// DER structures RFC 5280 needs are written here; every certificate is read back with X509Certificate before use.
import { createHash, createPrivateKey, generateKeyPairSync, randomBytes, sign, X509Certificate, type KeyObject } from "node:crypto";
import { isIP } from "node:net";

/** A certificate and its private key, both PEM. */
export interface IssuedCertificate {
  certPem: string;
  keyPem: string;
}

/** What to issue: the subject's common name, its validity, and (for a serving certificate) its DNS names or IPs. */
export interface CertificateRequest {
  commonName: string;
  notBeforeMs: number;
  notAfterMs: number;
  /** Absent: a CA certificate (may sign certificates, nothing else). */
  hosts?: readonly string[];
  /** The CA that signs it; absent: self-signed. */
  issuer?: IssuedCertificate;
}

const OID = {
  ecPublicKey: "1.2.840.10045.2.1",
  ecdsaSha256: "1.2.840.10045.4.3.2",
  commonName: "2.5.4.3",
  subjectKeyId: "2.5.29.14",
  keyUsage: "2.5.29.15",
  subjectAltName: "2.5.29.17",
  basicConstraints: "2.5.29.19",
  authorityKeyId: "2.5.29.35",
  extKeyUsage: "2.5.29.37",
  serverAuth: "1.3.6.1.5.5.7.3.1",
} as const;

function tlv(tag: number, body: Buffer): Buffer {
  const n = body.length;
  const len = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  if (n > 0xffff) throw new Error("DER value too long");
  return Buffer.concat([Buffer.from([tag]), len, body]);
}

const seq = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));
const octets = (b: Buffer) => tlv(0x04, b);
const bits = (b: Buffer, unused = 0) => tlv(0x03, Buffer.concat([Buffer.from([unused]), b]));
const explicit = (n: number, inner: Buffer) => tlv(0xa0 + n, inner);
const bool = (v: boolean) => tlv(0x01, Buffer.from([v ? 0xff : 0]));

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split(".").map(Number) as [number, number, ...number[]];
  const out = [a * 40 + b];
  for (const n of rest) {
    const groups = [n & 0x7f];
    for (let v = n >>> 7; v > 0; v >>>= 7) groups.unshift((v & 0x7f) | 0x80);
    out.push(...groups);
  }
  return tlv(0x06, Buffer.from(out));
}

function integer(b: Buffer): Buffer {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  const trimmed = b.subarray(i);
  return tlv(0x02, (trimmed[0]! & 0x80) !== 0 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

function time(ms: number): Buffer {
  const iso = new Date(ms).toISOString();
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  const year = new Date(ms).getUTCFullYear();
  // RFC 5280 4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050.
  return year < 2050 ? tlv(0x17, Buffer.from(digits.slice(2), "ascii")) : tlv(0x18, Buffer.from(digits, "ascii"));
}

const name = (cn: string) => seq(set(seq(oid(OID.commonName), tlv(0x0c, Buffer.from(cn, "utf8")))));
const extension = (id: string, critical: boolean, value: Buffer) => seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split(".").map(Number));
  const [head = "", tail = ""] = ip.split("::");
  const part = (s: string) => (s ? s.split(":").map((h) => parseInt(h, 16)) : []);
  const h = part(head);
  const t = part(tail);
  const groups = ip.includes("::") ? [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t] : h;
  return Buffer.concat(groups.map((g) => Buffer.from([g >> 8, g & 0xff])));
}

function subjectAltNames(hosts: readonly string[]): Buffer {
  // GeneralName: [2] dNSName (IA5String), [7] iPAddress (OCTET STRING), both implicit.
  return seq(...hosts.map((h) => (isIP(h) ? tlv(0x87, ipBytes(h)) : tlv(0x82, Buffer.from(h, "ascii")))));
}

const keyId = (spki: Buffer) => createHash("sha1").update(spki).digest();

/** Issue a CA (no `hosts`) or a serving certificate for `hosts`, signed by `issuer` or by itself. */
export function issueCertificate(req: CertificateRequest): IssuedCertificate {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const spki = publicKey.export({ type: "spki", format: "der" });
  const issuerCert = req.issuer ? new X509Certificate(req.issuer.certPem) : undefined;
  const signingKey: KeyObject = req.issuer ? createPrivateKey(req.issuer.keyPem) : privateKey;
  const issuerSpki = issuerCert ? issuerCert.publicKey.export({ type: "spki", format: "der" }) : spki;
  const isCa = req.hosts === undefined;
  // keyUsage bits: digitalSignature (0) for both; keyCertSign (5) and cRLSign (6) for the CA.
  const keyUsage = isCa ? bits(Buffer.from([0x86]), 1) : bits(Buffer.from([0x80]), 7);
  const extensions = [
    extension(OID.basicConstraints, true, isCa ? seq(bool(true)) : seq()),
    extension(OID.keyUsage, true, keyUsage),
    extension(OID.subjectKeyId, false, octets(keyId(spki))),
    extension(OID.authorityKeyId, false, seq(tlv(0x80, keyId(issuerSpki)))),
    ...(isCa ? [] : [
      extension(OID.extKeyUsage, false, seq(oid(OID.serverAuth))),
      extension(OID.subjectAltName, false, subjectAltNames(req.hosts ?? [])),
    ]),
  ];
  const algorithm = seq(oid(OID.ecdsaSha256));
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x01;
  const tbs = seq(
    explicit(0, integer(Buffer.from([2]))),
    integer(serial),
    algorithm,
    name(issuerCert ? issuerCert.subject.replace(/^CN=/, "") : req.commonName),
    seq(time(req.notBeforeMs), time(req.notAfterMs)),
    name(req.commonName),
    spki,
    explicit(3, seq(...extensions)),
  );
  const signature = sign("sha256", tbs, { key: signingKey, dsaEncoding: "der" });
  const der = seq(tbs, algorithm, bits(signature));
  const certPem = `-----BEGIN CERTIFICATE-----\n${der.toString("base64").replace(/(.{64})/g, "$1\n").replace(/\n?$/, "\n")}-----END CERTIFICATE-----\n`;
  const cert = new X509Certificate(certPem);
  if (!cert.verify(issuerCert ? issuerCert.publicKey : publicKey)) throw new Error("issued certificate does not verify");
  return { certPem, keyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString() };
}
