import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** A client certificate and its key, as file paths. */
export type ClientCertificate = { cert: string; key: string };

/**
 * Issues a client certificate for `subject` (e.g. `/O=system:nodes/CN=system:node:localhost`) with the
 * control plane's CA, in `dir` under `name`: the identity the API server authenticates the kubelet or
 * the scheduler as.
 */
export async function issueClientCertificate(dir: string, name: string, subject: string, caCert: string, caKey: string): Promise<ClientCertificate> {
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  const cert = join(dir, `${name}.crt`);
  await run("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key]);
  await run("openssl", ["req", "-new", "-key", key, "-subj", subject, "-out", csr]);
  await writeFile(ext, "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n");
  // A serial from the clock and the name: unique enough within one throwaway CA.
  const serial = String(Date.now() % 1_000_000_000) + String(name.length);
  await run("openssl", ["x509", "-req", "-in", csr, "-CA", caCert, "-CAkey", caKey, "-set_serial", serial, "-days", "2", "-sha256", "-extfile", ext, "-out", cert]);
  return { cert, key };
}
