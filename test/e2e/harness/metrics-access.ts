// Scrapes the operator's metrics on the real node as a real Prometheus does with the chart's defaults: the
// controller over HTTPS (verified against the chart's certificate) with the token of a ServiceAccount bound to
// <fullname>-metrics-reader, a sidecar with the scrape token the controller keeps in its Secret.
import { kubectl, scrapeHttps } from "../../integration/harness/index.ts";
import { getJson } from "./kube-json.ts";

type SecretJson = { data?: Record<string, string> };
const secretValue = async (namespace: string, name: string, key: string) =>
  Buffer.from((await getJson<SecretJson>(["get", "secret", name, "-n", namespace])).data?.[key] ?? "", "base64");

/**
 * The chart's `<fullname>` of a release (its _helpers.tpl): the release name when it contains the chart's name (the
 * quickstart's and the demo's `leviath-operator`), else `<release>-leviath-operator`.
 */
export const chartFullname = (release: string): string => release.includes("leviath-operator") ? release : `${release}-leviath-operator`;

/** Binds a new ServiceAccount `<release>-scraper` to the chart's metrics-reader role and returns its token. */
export async function createMetricsReader(release: string, namespace: string): Promise<string> {
  const name = `${release}-scraper`;
  await kubectl(["create", "serviceaccount", name, "-n", namespace], { allowFailure: true });
  await kubectl(["create", "clusterrolebinding", name, `--clusterrole=${chartFullname(release)}-metrics-reader`, `--serviceaccount=${namespace}:${name}`], { allowFailure: true });
  return (await kubectl(["create", "token", name, "-n", namespace, "--duration=1h"])).stdout.trim();
}

/** Removes what {@link createMetricsReader} made. */
export async function deleteMetricsReader(release: string, namespace: string): Promise<void> {
  await kubectl(["delete", "clusterrolebinding", `${release}-scraper`, "--ignore-not-found"], { allowFailure: true });
  await kubectl(["delete", "serviceaccount", `${release}-scraper`, "-n", namespace, "--ignore-not-found"], { allowFailure: true });
}

/** GET the controller pod's /metrics at `podIp:8080` over verified HTTPS, with `bearer` (none: no header). */
export async function scrapeController(release: string, namespace: string, podIp: string, bearer?: string): Promise<{ status: number; body: string }> {
  const fullname = chartFullname(release);
  const ca = await secretValue(namespace, `${fullname}-metrics-tls`, "tls.crt");
  return scrapeHttps({ address: `${podIp}:8080`, ca, servername: `${fullname}-metrics.${namespace}.svc`, bearer });
}

/** The sidecars' scrape token, from the Secret the controller created in its namespace. */
export async function sidecarScrapeToken(release: string, namespace: string): Promise<string> {
  return (await secretValue(namespace, `${chartFullname(release)}-sidecar-metrics`, "token")).toString("utf8");
}
