import { describe, expect, it } from 'vitest';
import { limitsParam } from './device-limits.ts';

describe('limitsParam', () => {
  it("asks for WebGPU's default limits on ?limits=default only", () => {
    expect(limitsParam('?limits=default')).toBe('default');
    expect(limitsParam('?hub=https://hf.co&limits=default')).toBe('default');
    expect(limitsParam('')).toBe('adapter');
    expect(limitsParam('?limits=adapter')).toBe('adapter');
    expect(limitsParam('?limits=tiny')).toBe('adapter');
  });
});
