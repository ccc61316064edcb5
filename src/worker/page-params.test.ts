import { describe, expect, it } from 'vitest';
import { limitsParam, warmUpParam } from './page-params.ts';

describe('limitsParam', () => {
  it("asks for WebGPU's default limits on ?limits=default only", () => {
    expect(limitsParam('?limits=default')).toBe('default');
    expect(limitsParam('?hub=https://hf.co&limits=default')).toBe('default');
    expect(limitsParam('')).toBe('adapter');
    expect(limitsParam('?limits=adapter')).toBe('adapter');
    expect(limitsParam('?limits=tiny')).toBe('adapter');
  });
});

describe('warmUpParam', () => {
  it('turns the kernel warm-up on or off on ?warmup=on|off, else leaves it to the adapter', () => {
    expect(warmUpParam('?warmup=on')).toBe('on');
    expect(warmUpParam('?limits=default&warmup=off')).toBe('off');
    expect(warmUpParam('')).toBe('auto');
    expect(warmUpParam('?warmup=yes')).toBe('auto');
  });
});
