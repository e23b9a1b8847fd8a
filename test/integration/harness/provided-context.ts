// What the integration project's global setup hands to the tests through vitest's provide/inject.
declare module "vitest" {
  export interface ProvidedContext {
    /** Path of the admin kubeconfig of the cluster under test. */
    kubeconfig: string;
    /** Directory of kubectl, helm and the control-plane binaries. */
    binDir: string;
  }
}

export {};
