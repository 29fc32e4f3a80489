/* eslint-disable @typescript-eslint/require-await -- in-memory fakes implement async ports synchronously */
/**
 * An in-memory stand-in for the kube ports: sessions, Pods and Secrets with UIDs, resourceVersions,
 * preconditions and AlreadyExists, an informer cache that can lag, a log of every write, and
 * injectable failures. Unit tests of the controller run against it; no client-node involved.
 */
import type { V1PersistentVolumeClaim, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { SandboxSession } from '@sandbox-platform/api';

import type { SessionKey } from '../../src/controller/session-key.js';
import { AlreadyExistsError, ConflictError } from '../../src/kube/errors.js';
import type {
  ClaimStore,
  EventRecorder,
  PodStore,
  SecretStore,
  SessionEvent,
  SessionStore,
  StatusPatch,
  StatusWrite,
  StorageClassLookup,
  WriteOutcome,
} from '../../src/kube/ports.js';
import { projectClaim, projectPod, projectSecret } from '../../src/state/projections.js';
import type { TenantSecretReader } from '../../src/kube/tenant-secrets.js';
import type { ClaimView, PodView, SecretView } from '../../src/state/views.js';

type Op =
  | 'createSecret'
  | 'createPod'
  | 'deletePod'
  | 'deleteSecret'
  | 'createClaim'
  | 'deleteClaim'
  | 'suspendSession'
  | 'patchStatus'
  | 'deleteSession'
  | 'getSession'
  | 'readSession';

/** The fake cluster. */
export class FakeCluster {
  readonly sessions = new Map<string, SandboxSession>();
  readonly pods = new Map<string, { body: V1Pod; view: PodView }>();
  readonly secrets = new Map<string, { body: V1Secret; view: SecretView }>();
  readonly claims = new Map<string, { body: V1PersistentVolumeClaim; view: ClaimView }>();
  /** StorageClasses that exist ("standard" is the default one, as if admission had filled it in). */
  readonly storageClasses = new Set<string>(['standard']);
  /** When set, the StorageClass lookup cannot tell (a refused read). */
  storageClassesUnknown = false;
  /** Class the DefaultStorageClass admission gives a claim that names none (undefined: no default). */
  defaultStorageClass: string | undefined = 'standard';
  /** Time stamped as a created claim's creationTimestamp. */
  claimCreatedAt = '2030-01-01T00:00:00Z';
  /** Tenant Secrets spec.env may name, by `namespace/name`: their data. */
  readonly tenantSecrets = new Map<string, Record<string, Buffer>>();
  /** Tenant Secret reads, as `namespace/name`, in order. */
  readonly tenantSecretReads: string[] = [];
  readonly events: Array<{ session: string; event: SessionEvent }> = [];
  readonly writes: string[] = [];
  /** Sessions read from the "API server" (not from the session cache), in order. */
  readonly sessionReads: string[] = [];
  /** When true, cached() answers from `podCache`/`secretCache`, which tests sync by hand. */
  lagCache = false;
  /** Deleted Pods stay, with a deletionTimestamp, until a test removes them (as a kubelet would). */
  holdDeletes = false;
  /**
   * When set, the session store's get() answers from this map (a watch-fed cache lagging the
   * stored sessions) and falls back to the stored session on a miss; tests fill it by hand. As in
   * kube/session-store.ts, a successful status write is written through to it and a refused one
   * drops the entry.
   */
  sessionCache?: Map<string, SandboxSession>;
  podCache = new Map<string, PodView>();
  secretCache = new Map<string, SecretView>();
  claimCache = new Map<string, ClaimView>();
  /** Errors to throw from the next call of an operation. */
  readonly failNext = new Map<Op, Error>();
  /** Called on every getSession, to let a test change the object between two reads. */
  onGet?: (key: string, count: number) => void;
  private gets = 0;
  private rv = 100;
  private uids = 0;

  /** Stores a session as the API server would. */
  putSession(s: SandboxSession): void {
    this.sessions.set(k(s.metadata.namespace!, s.metadata.name!), jsonClone(s));
  }

  /** The stored session. */
  session(namespace = 'team-a', name = 'demo'): SandboxSession | undefined {
    return this.sessions.get(k(namespace, name));
  }

  /** Stores a Pod view directly (as if created by someone else or earlier). */
  putPod(view: PodView): void {
    this.pods.set(k(view.metadata.namespace, view.metadata.name), { body: {}, view });
    this.podCache.set(k(view.metadata.namespace, view.metadata.name), view);
  }

  /** Stores a Secret view directly. */
  putSecret(view: SecretView): void {
    this.secrets.set(k(view.metadata.namespace, view.metadata.name), { body: {}, view });
    this.secretCache.set(k(view.metadata.namespace, view.metadata.name), view);
  }

  /** Stores a claim view directly. */
  putClaim(view: ClaimView): void {
    this.claims.set(k(view.metadata.namespace, view.metadata.name), { body: {}, view });
    this.claimCache.set(k(view.metadata.namespace, view.metadata.name), view);
  }

  /** Removes a child as the garbage collector would. */
  collect(kind: 'pod' | 'secret' | 'claim', namespace: string, name: string): void {
    const [store, cache] =
      kind === 'pod'
        ? [this.pods, this.podCache]
        : kind === 'secret'
          ? [this.secrets, this.secretCache]
          : [this.claims, this.claimCache];
    store.delete(k(namespace, name));
    cache.delete(k(namespace, name));
  }

  /** Replaces a stored claim's view (e.g. the PV controller binding it). */
  updateClaim(namespace: string, name: string, change: (v: ClaimView) => ClaimView): void {
    const entry = this.claims.get(k(namespace, name));
    if (!entry) throw new Error(`no claim ${name}`);
    entry.view = change(entry.view);
    this.claimCache.set(k(namespace, name), entry.view);
  }

  /** Replaces a stored Pod's view (e.g. the kubelet reporting status). */
  updatePod(namespace: string, name: string, change: (v: PodView) => PodView): void {
    const entry = this.pods.get(k(namespace, name));
    if (!entry) throw new Error(`no pod ${name}`);
    entry.view = change(entry.view);
    this.podCache.set(k(namespace, name), entry.view);
  }

  /** Changes a stored session (e.g. the gateway patching activity), bumping its resourceVersion. */
  touchSession(namespace: string, name: string, change: (s: SandboxSession) => void): void {
    const s = this.sessions.get(k(namespace, name));
    if (!s) throw new Error(`no session ${name}`);
    change(s);
    s.metadata.resourceVersion = String(++this.rv);
  }

  sessionStore(): SessionStore {
    return {
      get: async (key) => {
        this.failIfAsked('getSession');
        const cached = this.sessionCache?.get(k(key.namespace, key.name));
        if (cached) return jsonClone(cached);
        return this.freshRead(key);
      },
      read: async (key) => {
        this.failIfAsked('readSession');
        return this.freshRead(key);
      },
      listKeys: async () =>
        [...this.sessions.values()].map((s) => ({
          namespace: s.metadata.namespace!,
          name: s.metadata.name!,
        })),
      patchStatus: async (key, patch, resourceVersion) => this.patchStatus(key, patch, resourceVersion),
      suspend: async (key, resourceVersion) => {
        this.failIfAsked('suspendSession');
        const s = this.sessions.get(k(key.namespace, key.name));
        if (!s) return 'gone';
        if (s.metadata.resourceVersion !== resourceVersion) {
          this.sessionCache?.delete(k(key.namespace, key.name));
          throw new ConflictError('resourceVersion mismatch');
        }
        s.spec = { ...s.spec, suspend: true };
        s.metadata.generation = (s.metadata.generation ?? 1) + 1;
        s.metadata.resourceVersion = String(++this.rv);
        this.writes.push(`suspendSession ${key.name}`);
        if (this.sessionCache?.has(k(key.namespace, key.name)))
          this.sessionCache.set(k(key.namespace, key.name), jsonClone(s));
        return jsonClone(s);
      },
      delete: async (key, pre) => {
        this.failIfAsked('deleteSession');
        const s = this.sessions.get(k(key.namespace, key.name));
        if (!s) return 'gone';
        if (s.metadata.uid !== pre.uid || s.metadata.resourceVersion !== pre.resourceVersion) {
          throw new ConflictError('precondition failed');
        }
        this.sessions.delete(k(key.namespace, key.name));
        this.writes.push(`deleteSession ${key.name}`);
        return 'done';
      },
    };
  }

  podStore(): PodStore {
    return {
      cached: (ns, name) => (this.lagCache ? this.podCache : mapViews(this.pods)).get(k(ns, name)),
      read: async (ns, name) => this.pods.get(k(ns, name))?.view,
      create: async (ns, body) => {
        this.failIfAsked('createPod');
        const name = body.metadata!.name!;
        if (this.pods.has(k(ns, name))) throw new AlreadyExistsError(`pod ${name} exists`);
        const view = projectPod(this.stamp(body));
        if (!view) throw new Error('unprojectable pod');
        this.pods.set(k(ns, name), { body, view });
        this.writes.push(`createPod ${name}`);
        return view;
      },
      delete: async (ns, name, uid) => this.deleteChild('deletePod', this.pods, this.podCache, ns, name, uid),
    };
  }

  secretStore(): SecretStore {
    return {
      cached: (ns, name) => (this.lagCache ? this.secretCache : mapViews(this.secrets)).get(k(ns, name)),
      read: async (ns, name) => this.secrets.get(k(ns, name))?.view,
      create: async (ns, body) => {
        this.failIfAsked('createSecret');
        const name = body.metadata!.name!;
        if (this.secrets.has(k(ns, name))) throw new AlreadyExistsError(`secret ${name} exists`);
        const view = projectSecret(this.stamp(body));
        if (!view) throw new Error('unprojectable secret');
        this.secrets.set(k(ns, name), { body, view });
        this.writes.push(`createSecret ${name}`);
        return view;
      },
      delete: async (ns, name, uid) =>
        this.deleteChild('deleteSecret', this.secrets, this.secretCache, ns, name, uid),
    };
  }

  claimStore(): ClaimStore {
    return {
      cached: (ns, name) => (this.lagCache ? this.claimCache : mapViews(this.claims)).get(k(ns, name)),
      read: async (ns, name) => this.claims.get(k(ns, name))?.view,
      create: async (ns, body) => {
        this.failIfAsked('createClaim');
        const name = body.metadata!.name!;
        if (this.claims.has(k(ns, name))) throw new AlreadyExistsError(`claim ${name} exists`);
        const stamped = this.stamp(body);
        const view = projectClaim({
          ...stamped,
          metadata: { ...stamped.metadata, creationTimestamp: this.claimCreatedAt },
          spec: {
            ...stamped.spec,
            storageClassName: body.spec?.storageClassName ?? this.defaultStorageClass,
          },
          status: { phase: 'Pending' },
        });
        if (!view) throw new Error('unprojectable claim');
        this.claims.set(k(ns, name), { body, view });
        this.writes.push(`createClaim ${name}`);
        return view;
      },
      delete: async (ns, name, uid) =>
        this.deleteChild('deleteClaim', this.claims, this.claimCache, ns, name, uid),
    };
  }

  storageClassLookup(): StorageClassLookup {
    return {
      exists: async (name) => (this.storageClassesUnknown ? undefined : this.storageClasses.has(name)),
    };
  }

  tenantSecretReader(): TenantSecretReader {
    return {
      read: async (namespace, name) => {
        this.tenantSecretReads.push(`${namespace}/${name}`);
        return this.tenantSecrets.get(`${namespace}/${name}`);
      },
    };
  }

  eventRecorder(): EventRecorder {
    return { record: (session, event) => this.events.push({ session: session.metadata.name!, event }) };
  }

  /** Event reasons recorded so far. */
  eventReasons(): string[] {
    return this.events.map((e) => e.event.reason);
  }

  private freshRead(key: SessionKey): SandboxSession | undefined {
    this.onGet?.(k(key.namespace, key.name), ++this.gets);
    this.sessionReads.push(key.name);
    const s = this.sessions.get(k(key.namespace, key.name));
    return s && jsonClone(s);
  }

  private patchStatus(key: SessionKey, patch: StatusPatch, resourceVersion: string): StatusWrite {
    this.failIfAsked('patchStatus');
    const s = this.sessions.get(k(key.namespace, key.name));
    if (!s) return 'gone';
    // As the API server: an empty resourceVersion is no precondition.
    if (resourceVersion !== '' && s.metadata.resourceVersion !== resourceVersion) {
      this.sessionCache?.delete(k(key.namespace, key.name));
      throw new ConflictError('resourceVersion mismatch');
    }
    const status: Record<string, unknown> = { ...(s.status ?? {}) };
    for (const [field, value] of Object.entries(patch)) {
      if (value === null) delete status[field];
      else status[field] = jsonClone(value);
    }
    s.status = status;
    s.metadata.resourceVersion = String(++this.rv);
    this.writes.push(`patchStatus ${key.name}`);
    if (this.sessionCache?.has(k(key.namespace, key.name)))
      this.sessionCache.set(k(key.namespace, key.name), jsonClone(s));
    return { resourceVersion: s.metadata.resourceVersion };
  }

  private deleteChild<T extends { view: { metadata: { uid: string } } }>(
    op: Op,
    store: Map<string, T>,
    cache: Map<string, unknown>,
    ns: string,
    name: string,
    uid: string,
  ): WriteOutcome {
    this.failIfAsked(op);
    const entry = store.get(k(ns, name));
    if (!entry || entry.view.metadata.uid !== uid) return 'gone';
    if (this.holdDeletes && op === 'deletePod') {
      // A kubelet-managed Pod terminates first: it stays, marked for deletion.
      const meta = entry.view.metadata as { deletionTimestamp?: string };
      if (!meta.deletionTimestamp) {
        meta.deletionTimestamp = '2030-01-01T00:00:00Z';
        this.writes.push(`${op} ${name}`);
      }
      return 'done';
    }
    store.delete(k(ns, name));
    cache.delete(k(ns, name));
    this.writes.push(`${op} ${name}`);
    return 'done';
  }

  private stamp<T extends { metadata?: object }>(body: T): T {
    const copy = jsonClone(body) as T & { metadata: Record<string, unknown> };
    copy.metadata = { ...copy.metadata, uid: `child-${++this.uids}`, resourceVersion: String(++this.rv) };
    return copy;
  }

  private failIfAsked(op: Op): void {
    const err = this.failNext.get(op);
    if (err !== undefined) {
      this.failNext.delete(op);
      throw err;
    }
  }
}

function k(ns: string, name: string): string {
  return `${ns}/${name}`;
}

function mapViews<V>(m: Map<string, { view: V }>): Map<string, V> {
  return new Map([...m].map(([key, e]) => [key, e.view]));
}

/** A deep copy as a JSON round trip makes it (what the API server would return). */
function jsonClone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
