import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Where the generated PKI lives: every path is inside the control plane's data dir. */
export type Certificates = {
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  adminCert: string;
  adminKey: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
  /** The API server's client certificate towards kubelets (exec, logs, port-forward). */
  kubeletClientCert: string;
  kubeletClientKey: string;
};

/** Who the API server is to a kubelet; the node harness binds it to `system:kubelet-api-admin`, as kubeadm does. */
export const KUBELET_CLIENT_USER = "kube-apiserver-kubelet-client";

/** The identity of the generated admin client certificate (system:masters bypasses RBAC, as kubeadm's admin does). */
export const ADMIN_USER = "leviath-admin";

const CA_EXTENSIONS = ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"];

/**
 * Generates a throwaway CA, the API server's serving certificate (127.0.0.1, localhost and the in-cluster
 * names), an admin client certificate in system:masters, the API server's client certificate for kubelets
 * and the service-account signing key pair, with
 * the openssl CLI (Node's crypto can parse certificates but not issue them).
 */
export async function generateCertificates(dir: string): Promise<Certificates> {
  const p = (name: string): string => join(dir, name);
  const certs: Certificates = {
    caCert: p("ca.crt"),
    caKey: p("ca.key"),
    serverCert: p("apiserver.crt"),
    serverKey: p("apiserver.key"),
    adminCert: p("admin.crt"),
    adminKey: p("admin.key"),
    serviceAccountKey: p("sa.key"),
    serviceAccountPub: p("sa.pub"),
    kubeletClientCert: p("apiserver-kubelet-client.crt"),
    kubeletClientKey: p("apiserver-kubelet-client.key"),
  };
  await openssl(["version"]).catch((error: unknown) => {
    throw new Error(`the control-plane harness needs the openssl CLI to issue certificates (apt-get install openssl): ${String(error)}`);
  });

  // EC keys for TLS (fast to generate); RSA for service-account tokens, the algorithm every client expects.
  await Promise.all([
    ecKey(certs.caKey),
    ecKey(certs.serverKey),
    ecKey(certs.adminKey),
    ecKey(certs.kubeletClientKey),
    openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", certs.serviceAccountKey]),
  ]);
  await openssl(["pkey", "-in", certs.serviceAccountKey, "-pubout", "-out", certs.serviceAccountPub]);
  await openssl([
    "req", "-x509", "-new", "-key", certs.caKey, "-subj", "/CN=leviath-test-ca", "-days", "3650", "-out", certs.caCert,
    ...CA_EXTENSIONS.flatMap((e) => ["-addext", e]),
  ]);

  const serverNames = [
    "IP:127.0.0.1", "IP:10.96.0.1", "DNS:localhost", "DNS:kubernetes", "DNS:kubernetes.default",
    "DNS:kubernetes.default.svc", "DNS:kubernetes.default.svc.cluster.local",
  ];
  await Promise.all([
    issue(dir, certs, "apiserver", 1, "/CN=kube-apiserver", certs.serverKey, certs.serverCert, [
      `subjectAltName=${serverNames.join(",")}`, "extendedKeyUsage=serverAuth",
    ]),
    issue(dir, certs, "admin", 2, `/O=system:masters/CN=${ADMIN_USER}`, certs.adminKey, certs.adminCert, [
      "extendedKeyUsage=clientAuth",
    ]),
    issue(dir, certs, "apiserver-kubelet-client", 3, `/CN=${KUBELET_CLIENT_USER}`, certs.kubeletClientKey, certs.kubeletClientCert, [
      "extendedKeyUsage=clientAuth",
    ]),
  ]);
  return certs;
}

async function openssl(args: string[]): Promise<void> {
  await run("openssl", args);
}

async function ecKey(out: string): Promise<void> {
  await openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", out]);
}

/** Signs a leaf certificate for `key` with the CA. */
async function issue(
  dir: string, certs: Certificates, name: string, serial: number, subject: string, key: string, out: string, extensions: string[],
): Promise<void> {
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  await writeFile(ext, ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment", ...extensions].join("\n") + "\n");
  await openssl(["req", "-new", "-key", key, "-subj", subject, "-out", csr]);
  await openssl([
    "x509", "-req", "-in", csr, "-CA", certs.caCert, "-CAkey", certs.caKey, "-set_serial", String(serial),
    "-days", "365", "-sha256", "-extfile", ext, "-out", out,
  ]);
}
