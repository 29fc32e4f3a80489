import { integrationPreset } from '@sandbox-platform/test-support/jest.integration.preset.js';

export default integrationPreset(import.meta.dirname);
