// The builder's undo/redo stack: snapshots before each edit, merging of quick edits of one field, the
// redo side dropped by a new edit, the depth limit.

import { describe, expect, it } from 'vitest';
import { defaultRunConfig } from '../../config/run-presets.ts';
import { type BuilderSnapshot, HISTORY_LIMIT, MERGE_MS, emptyHistory, record, redo, undo } from './history.ts';

const snap = (seed: number): BuilderSnapshot => {
  const draft = defaultRunConfig();
  draft.seed = seed;
  return { draft, agentIds: ['a1', 'a2'], preset: 'duo' };
};

describe('undo/redo', () => {
  it('undoes and redoes edits in order', () => {
    let h = emptyHistory();
    h = record(h, snap(0), null, 0); // 0 -> 1
    h = record(h, snap(1), null, 10); // 1 -> 2
    const u1 = undo(h, snap(2))!;
    expect(u1.snapshot.draft.seed).toBe(1);
    const u2 = undo(u1.history, u1.snapshot)!;
    expect(u2.snapshot.draft.seed).toBe(0);
    expect(undo(u2.history, u2.snapshot)).toBeNull();
    const r1 = redo(u2.history, u2.snapshot)!;
    expect(r1.snapshot.draft.seed).toBe(1);
    const r2 = redo(r1.history, r1.snapshot)!;
    expect(r2.snapshot.draft.seed).toBe(2);
    expect(redo(r2.history, r2.snapshot)).toBeNull();
  });

  it('merges quick edits of the same field into one step, not edits of different fields or slow ones', () => {
    let h = emptyHistory();
    h = record(h, snap(0), 'seed', 0); // typing "12": 0 -> 1
    h = record(h, snap(1), 'seed', 200); // 1 -> 12, merged
    expect(h.past.map((s) => s.draft.seed)).toEqual([0]);
    h = record(h, snap(12), 'iterations', 300);
    h = record(h, snap(13), 'iterations', 300 + MERGE_MS);
    expect(h.past.map((s) => s.draft.seed)).toEqual([0, 12, 13]);
    h = record(h, snap(14), null, 300 + MERGE_MS + 1);
    h = record(h, snap(15), null, 300 + MERGE_MS + 2); // keyless edits never merge
    expect(h.past.map((s) => s.draft.seed)).toEqual([0, 12, 13, 14, 15]);
  });

  it('drops the redo side on a new edit, and an undo breaks a merge', () => {
    let h = emptyHistory();
    h = record(h, snap(0), 'seed', 0);
    const u = undo(h, snap(1))!;
    h = record(u.history, snap(0), 'seed', 10);
    expect(h.future).toEqual([]);
    expect(h.past.map((s) => s.draft.seed)).toEqual([0]);
  });

  it('keeps at most HISTORY_LIMIT steps, the newest', () => {
    let h = emptyHistory();
    for (let i = 0; i < HISTORY_LIMIT + 5; i++) h = record(h, snap(i), null, i);
    expect(h.past).toHaveLength(HISTORY_LIMIT);
    expect(h.past[0].draft.seed).toBe(5);
  });
});
