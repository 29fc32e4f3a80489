import { integrationPreset } from './jest.integration.preset.js';

export default integrationPreset(import.meta.dirname);
