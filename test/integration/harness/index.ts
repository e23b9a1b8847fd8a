// The integration-test harness in one import: the cluster's clients, and helpers to create
// namespaces, install CRDs, wait, and run kubectl and helm.
export { apiError, expectApiError } from "./api-error.ts";
export type { ApiError } from "./api-error.ts";
export { findBinary, REPO_ROOT, resolveBinDir, startControlPlane } from "./control-plane.ts";
export type { ControlPlane, ControlPlaneOptions } from "./control-plane.ts";
export { applyObjects, HARNESS_FIELD_MANAGER, installCrds, readManifests, toClientModel } from "./install-crds.ts";
export { createRestrictedNamespace, deleteNamespace, POD_SECURITY_ENFORCE_LABEL, uniqueName } from "./create-restricted-namespace.ts";
export { createTestCluster, testCluster, useTestCluster } from "./test-cluster.ts";
export type { TestCluster } from "./test-cluster.ts";
export { helm, kubectl, kubectlLeviath, kubectlLeviathEnv } from "./kubectl.ts";
export { APPROVAL_TEMPLATE, fillApprovalTemplate } from "./approval-template.ts";
export type { ToolOptions, ToolResult } from "./kubectl.ts";
export { findCondition, waitFor, waitForCondition } from "./wait-for.ts";
export type { Condition, ObjectRef, WaitOptions } from "./wait-for.ts";
export { scrapeHttps, serviceAccountToken } from "./metrics-scrape.ts";
export type { SecureScrape } from "./metrics-scrape.ts";
