import { describe, expect, it } from 'vitest';
import { formatKernelTable, kernelRows, opOf, phaseRows, sortKernelRows, totalMs } from './profile-table.ts';

const TIMES = [
  { key: 'matmul:nt:f32:64x64/forward', ms: 6, calls: 3 },
  { key: 'lora/backward_dx', ms: 1, calls: 4 },
  { key: 'matmul:nn:f32:gemv/forward', ms: 2, calls: 8 },
  { key: 'lora/forward_h', ms: 1, calls: 2 },
  { key: 'elementwise/add', ms: 0, calls: 5 },
];

describe('profile table', () => {
  it('names the op of a kernel', () => {
    expect(opOf('matmul:nt:f32:64x64/forward')).toBe('matmul');
    expect(opOf('lora/backward_dA')).toBe('lora');
    expect(opOf('adamw')).toBe('adamw');
  });

  it('gives per-kernel rows, largest first, with shares and mean per call', () => {
    const rows = kernelRows(TIMES);
    expect(rows.map((r) => r.key)).toEqual([
      'matmul:nt:f32:64x64/forward',
      'matmul:nn:f32:gemv/forward',
      'lora/backward_dx',
      'lora/forward_h',
      'elementwise/add',
    ]);
    expect(rows[0]).toEqual({ key: 'matmul:nt:f32:64x64/forward', calls: 3, ms: 6, meanMs: 2, share: 0.6 });
    expect(rows[1].meanMs).toBeCloseTo(0.25);
    expect(rows.reduce((a, r) => a + r.share, 0)).toBeCloseTo(1);
    expect(totalMs(rows)).toBe(10);
  });

  it('sums rows per op', () => {
    const rows = kernelRows(TIMES, 'op');
    expect(rows).toEqual([
      { key: 'matmul', calls: 11, ms: 8, meanMs: 8 / 11, share: 0.8 },
      { key: 'lora', calls: 6, ms: 2, meanMs: 2 / 6, share: 0.2 },
      { key: 'elementwise', calls: 5, ms: 0, meanMs: 0, share: 0 },
    ]);
  });

  it('repeats keys by summing them, and treats negative or non-finite times as 0', () => {
    const rows = kernelRows([
      { key: 'a/x', ms: 1, calls: 1 },
      { key: 'a/x', ms: 2, calls: 2 },
      { key: 'b/y', ms: -1, calls: 1 },
      { key: 'c/z', ms: NaN, calls: 1 },
    ]);
    expect(rows[0]).toEqual({ key: 'a/x', calls: 3, ms: 3, meanMs: 1, share: 1 });
    expect(rows.slice(1).map((r) => [r.ms, r.share])).toEqual([
      [0, 0],
      [0, 0],
    ]);
    expect(kernelRows([])).toEqual([]);
    expect(kernelRows([{ key: 'a/x', ms: 0, calls: 2 }])[0].share).toBe(0);
  });

  it('sorts by any column, ties by key, without changing its input', () => {
    const rows = kernelRows(TIMES);
    const before = rows.map((r) => r.key);
    expect(sortKernelRows(rows, 'calls', 'desc').map((r) => r.calls)).toEqual([8, 5, 4, 3, 2]);
    expect(sortKernelRows(rows, 'key', 'asc')[0].key).toBe('elementwise/add');
    expect(
      sortKernelRows(rows, 'ms', 'asc')
        .map((r) => r.key)
        .slice(0, 3),
    ).toEqual(['elementwise/add', 'lora/backward_dx', 'lora/forward_h']);
    expect(sortKernelRows(rows, 'meanMs', 'desc')[0].key).toBe('matmul:nt:f32:64x64/forward');
    expect(rows.map((r) => r.key)).toEqual(before);
  });

  it('formats a terminal table with the rest summed and a total line', () => {
    const text = formatKernelTable(kernelRows(TIMES), 2);
    const lines = text.split('\n');
    expect(lines).toHaveLength(1 + 2 + 1 + 1);
    expect(lines[1]).toMatch(/^\s+6\.00\s+60\.0%\s+3\s+2\.000\s+matmul:nt:f32:64x64\/forward$/);
    expect(lines[3]).toMatch(/^\s+2\.00\s+20\.0%\s+11\s+\(3 more kernels\)$/);
    expect(lines[4]).toMatch(/^\s+10\.00\s+100\.0%\s+22\s+total$/);
  });

  it('splits an iteration into phases with shares and the time outside them', () => {
    const rows = phaseRows({ rollout: 6, score: 1, advantages: 0.5, update: 2, total: 10 });
    expect(rows.map((r) => r.phase)).toEqual(['rollout', 'score', 'advantages', 'update', 'other']);
    expect(rows[0].share).toBeCloseTo(0.6);
    expect(rows[4].seconds).toBeCloseTo(0.5);
    expect(phaseRows({ rollout: 1, score: 1, advantages: 0, update: 2, total: 4 }).map((r) => r.phase)).not.toContain('other');
    expect(phaseRows({ rollout: 0, score: 0, advantages: 0, update: 0, total: 0 }).every((r) => r.share === 0)).toBe(true);
  });
});
