/** Operator-wide inputs of buildPod, from the operator configuration. */

/** Requests and limits of the resources the operator defaults. */
export interface ResourceDefaults {
  readonly requests: Readonly<Record<DefaultedResource, string>>;
  readonly limits: Readonly<Record<DefaultedResource, string>>;
}

/** The resources that get a default request and limit when the spec names neither. */
export type DefaultedResource = 'cpu' | 'memory';

/** Everything buildPod needs beyond the session itself. */
export interface PodBuildOptions {
  /** Image when spec.image is unset. */
  readonly defaultImage: string;
  /** Requests and limits per resource the spec does not mention at all. */
  readonly defaultResources: ResourceDefaults;
  /** /workspace size limit when spec.workspace.sizeLimit is unset. */
  readonly defaultWorkspaceSize: string;
  /** Size limit of the /tmp emptyDir. */
  readonly tmpSize: string;
  /** UID (and GID, fsGroup) the sandbox runs as; never 0 (runAsNonRoot). */
  readonly runAsUser: number;
  /** Grace period of the sandbox Pod on deletion. */
  readonly terminationGracePeriodSeconds: number;
  /**
   * RuntimeClass of sessions whose spec names none (e.g. gvisor); undefined: the node's default
   * runtime. In the operator it is read at each build from the RuntimeClass check
   * (kube/runtime-class.ts): the configured name while that RuntimeClass exists, else undefined.
   */
  readonly defaultRuntimeClassName?: string;
  /**
   * URL of the platform's egress proxy (e.g. http://<release>-egress-proxy.<ns>.svc:3128) when it
   * is on: the Pod gets it as HTTP(S)_PROXY and trusts the namespace's interception CA
   * (resources/egress.ts). Undefined: neither.
   */
  readonly egressProxyUrl?: string;
  /**
   * Address of the egress proxy's DNS (its Service) when sandboxes resolve through it: the Pod gets
   * `dnsPolicy: None` with it as the only name server (resources/egress.ts). Undefined: the
   * cluster DNS.
   */
  readonly egressDnsServer?: string;
}
