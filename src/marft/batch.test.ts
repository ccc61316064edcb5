// Action batches: the padded layout, the action rows whose logits are taken, and the chunking that bounds
// tokens, sequences and logits rows.

import { describe, expect, it } from 'vitest';
import { buildBatch, chunkActions } from './batch.ts';
import type { ActionRecord } from './rollout.ts';

const act = (agent: number, prompt: number[], action: number[]): ActionRecord => ({
  episode: 0,
  turn: 0,
  agent,
  role: `a${agent}`,
  promptIds: prompt,
  actionIds: action,
  behaviourLogp: action.map(() => 0),
  text: '',
  finish: 'length',
  truncated: 0,
});

describe('buildBatch', () => {
  it('lays out actions right-padded, with their action rows and targets in order', () => {
    const b = buildBatch([act(0, [5, 6], [7, 8, 9]), act(1, [1, 2, 3], [4]), act(0, [2], [])], (a) => a, 0);
    expect([b.B, b.T]).toEqual([3, 5]);
    expect(Array.from(b.ids)).toEqual([5, 6, 7, 8, 9, 1, 2, 3, 4, 0, 2, 0, 0, 0, 0]);
    expect(Array.from(b.mask)).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0]);
    // the logit at position P-1+k predicts generated token k
    expect(Array.from(b.targets)).toEqual([-1, 7, 8, 9, -1, -1, -1, 4, -1, -1, -1, -1, -1, -1, -1]);
    expect(b.rows).toEqual([
      { start: 1, count: 3, at: 0 },
      { start: 7, count: 1, at: 3 },
      { start: 10, count: 0, at: 4 },
    ]);
    expect(Array.from(b.logitRows)).toEqual([1, 2, 3, 7]);
    expect(Array.from(b.logitTargets)).toEqual([7, 8, 9, 4]);
    expect(Array.from(b.slots)).toEqual([0, 1, 0]);
  });
});

describe('chunkActions', () => {
  const acts = [act(0, [1, 2], [3, 4]), act(0, [1, 2], [3, 4, 5, 6]), act(1, [1], [2]), act(1, [1, 2, 3], [4, 5])];
  const lens = (cs: ActionRecord[][]) => cs.map((c) => c.map((a) => a.promptIds.length + a.actionIds.length));

  it('sorts by length and keeps each chunk under the padded token budget', () => {
    expect(lens(chunkActions(acts, 12))).toEqual([
      [2, 4],
      [5, 6],
    ]); // a third action: 3 x 5 = 15 > 12; 2 x 6 = 12 fits
    // three chunks either way; [2], [4, 5], [6] pads 18 tokens' worth against 19 for [2, 4], [5], [6]
    expect(lens(chunkActions(acts, 11))).toEqual([[2], [4, 5], [6]]);
    expect(lens(chunkActions(acts, 1000))).toEqual([[2, 4, 5, 6]]);
  });

  it('also bounds the logits rows (action tokens) and the sequences of a chunk', () => {
    expect(lens(chunkActions(acts, 1000, 64, 4))).toEqual([[2], [4, 5], [6]]); // 1, 2+2, 4 action rows
    expect(lens(chunkActions(acts, 1000, 2))).toEqual([
      [2, 4],
      [5, 6],
    ]);
  });

  it('an action past a bound forms a chunk of its own', () => {
    expect(lens(chunkActions(acts, 3))).toEqual([[2], [4], [5], [6]]);
    expect(lens(chunkActions(acts, 1000, 64, 1))).toEqual([[2], [4], [5], [6]]);
  });

  it("does not pad a planner batch to the solver's length where they need two chunks anyway", () => {
    // the 135M bench: 8 planners of 64 + 128 tokens, 8 solvers of 208 + 128, at most 1 365 logits rows a chunk.
    // The first fit took 8 planners and 2 solvers (10 x 336 tokens), then 6 solvers: 5 376 padded tokens
    // against 8 x 192 + 8 x 336 = 4 224.
    const ep = (agent: number, P: number) =>
      act(
        agent,
        Array.from({ length: P }, () => 1),
        Array.from({ length: 128 }, () => 2),
      );
    const bench = [...Array.from({ length: 8 }, () => ep(0, 64)), ...Array.from({ length: 8 }, () => ep(1, 208))];
    const chunks = chunkActions(bench, 4096, 64, 1365);
    expect(lens(chunks)).toEqual([Array(8).fill(192), Array(8).fill(336)]);
    expect(chunks.map((c) => new Set(c.map((a) => a.agent)).size)).toEqual([1, 1]);
  });

  it('takes more chunks only where they save more padding than a chunk costs', () => {
    const ep = (P: number) =>
      act(
        0,
        Array.from({ length: P }, () => 1),
        [2],
      );
    // 4 of length 10 and 4 of 200: one chunk pads 4 x 190 = 760 tokens, more than a chunk's cost (512)
    expect(lens(chunkActions([...[9, 9, 9, 9].map(ep), ...[199, 199, 199, 199].map(ep)], 10000)).length).toBe(2);
    // 4 of length 100 and 4 of 200: 400 tokens of padding cost less than another chunk
    expect(lens(chunkActions([...[99, 99, 99, 99].map(ep), ...[199, 199, 199, 199].map(ep)], 10000)).length).toBe(1);
  });
});
