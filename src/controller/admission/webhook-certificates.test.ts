import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { decideRenewal } from "./webhook-certificates.ts";
import { issueCertificate } from "./x509.ts";

const now = Date.parse("2026-06-01T00:00:00Z");
const HOUR = 3_600_000;
const ca = issueCertificate({ commonName: "ca", notBeforeMs: now - HOUR, notAfterMs: now + 100 * HOUR });
const leaf = (hours: number, hosts = ["svc.ns.svc", "127.0.0.1"], issuer = ca) =>
  issueCertificate({ commonName: "svc", notBeforeMs: now - HOUR, notAfterMs: now + hours * HOUR, hosts, issuer });
const material = (cert = leaf(10)) => ({ caBundlePem: ca.certPem, caKeyPem: ca.keyPem, certPem: cert.certPem, keyPem: cert.keyPem });

describe("issueCertificate", () => {
  it("issues a CA and a serving certificate it signs, for DNS names and IPs", () => {
    const cert = new X509Certificate(leaf(10).certPem);
    expect(cert.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
    expect(cert.checkHost("svc.ns.svc")).toBe("svc.ns.svc");
    expect(cert.checkIP("127.0.0.1")).toBe("127.0.0.1");
    expect(new X509Certificate(ca.certPem).ca).toBe(true);
    expect(cert.ca).toBe(false);
  });
});

describe("decideRenewal", () => {
  it("keeps current material", () => expect(decideRenewal(material(), ["svc.ns.svc", "127.0.0.1"], now)).toBe("keep"));
  it("renews a certificate with a third of its life left, or one lacking a host", () => {
    expect(decideRenewal(material(leaf(0.4)), ["svc.ns.svc"], now)).toBe("cert");
    expect(decideRenewal(material(), ["other.ns.svc"], now)).toBe("cert");
  });
  it("renews a certificate another CA signed", () => {
    const other = issueCertificate({ commonName: "other", notBeforeMs: now - HOUR, notAfterMs: now + 100 * HOUR });
    expect(decideRenewal(material(leaf(10, ["svc.ns.svc"], other)), ["svc.ns.svc"], now)).toBe("cert");
  });
  it("renews the CA near its end, and everything when nothing or garbage is stored", () => {
    expect(decideRenewal(material(), ["svc.ns.svc"], now + 80 * HOUR)).toBe("ca");
    expect(decideRenewal({}, ["svc.ns.svc"], now)).toBe("ca");
    expect(decideRenewal({ ...material(), caBundlePem: "junk" }, ["svc.ns.svc"], now)).toBe("ca");
  });
});
