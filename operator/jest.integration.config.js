// Integration tier of the operator: a real kube-apiserver (control-plane-only localkube started by
// the shared globalSetup, see test-support/jest.integration.preset.js) and the operator as a child
// process (`node operator/dist/main.js`, built by the tests' harness). No kubelet: tests write
// pod status themselves.
import { integrationPreset } from '@sandbox-platform/test-support/jest.integration.preset.js';

//
// Two files at a time: each file's operator process watches and leases only its own namespace
// (harness/fixture.ts), and most of a file's time is waiting for the operator's timers (idle and
// lifetime collection, watch resyncs). 236 s one at a time (clean-clone CI of 2026-12-06), 182 s
// two at a time under a running benchmark.
export default integrationPreset(import.meta.dirname, { testTimeout: 180_000, maxWorkers: 2 });
