// Integration tier of the operator: a real kube-apiserver (control-plane-only localkube started by
// the shared globalSetup, see test-support/jest.integration.preset.js) and the operator as a child
// process (`node operator/dist/main.js`, built by the tests' harness). No kubelet: tests write
// pod status themselves.
import { integrationPreset } from '@sandbox-platform/test-support/jest.integration.preset.js';

export default integrationPreset(import.meta.dirname, { testTimeout: 180_000 });
