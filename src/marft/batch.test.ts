// Action batches: the padded layout, the action rows whose logits are taken, and the chunking that bounds
// tokens, sequences and logits rows.

import { describe, expect, it } from 'vitest';
import { buildBatch, chunkActions } from './batch.ts';
import type { ActionRecord } from './rollout.ts';

const act = (agent: number, prompt: number[], action: number[]): ActionRecord => ({
  episode: 0, turn: 0, agent, role: `a${agent}`, promptIds: prompt, actionIds: action, behaviourLogp: action.map(() => 0), text: '', finish: 'length', truncated: 0,
});

describe('buildBatch', () => {
  it('lays out actions right-padded, with their action rows and targets in order', () => {
    const b = buildBatch([act(0, [5, 6], [7, 8, 9]), act(1, [1, 2, 3], [4]), act(0, [2], [])], (a) => a, 0);
    expect([b.B, b.T]).toEqual([3, 5]);
    expect(Array.from(b.ids)).toEqual([5, 6, 7, 8, 9, 1, 2, 3, 4, 0, 2, 0, 0, 0, 0]);
    expect(Array.from(b.mask)).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0]);
    // the logit at position P-1+k predicts generated token k
    expect(Array.from(b.targets)).toEqual([-1, 7, 8, 9, -1, -1, -1, 4, -1, -1, -1, -1, -1, -1, -1]);
    expect(b.rows).toEqual([{ start: 1, count: 3, at: 0 }, { start: 7, count: 1, at: 3 }, { start: 10, count: 0, at: 4 }]);
    expect(Array.from(b.logitRows)).toEqual([1, 2, 3, 7]);
    expect(Array.from(b.logitTargets)).toEqual([7, 8, 9, 4]);
    expect(Array.from(b.slots)).toEqual([0, 1, 0]);
  });
});

describe('chunkActions', () => {
  const acts = [act(0, [1, 2], [3, 4]), act(0, [1, 2], [3, 4, 5, 6]), act(1, [1], [2]), act(1, [1, 2, 3], [4, 5])];
  const lens = (cs: ActionRecord[][]) => cs.map((c) => c.map((a) => a.promptIds.length + a.actionIds.length));

  it('sorts by length and keeps each chunk under the padded token budget', () => {
    expect(lens(chunkActions(acts, 12))).toEqual([[2, 4], [5, 6]]); // a third action: 3 x 5 = 15 > 12; 2 x 6 = 12 fits
    expect(lens(chunkActions(acts, 11))).toEqual([[2, 4], [5], [6]]);
  });

  it('also bounds the logits rows (action tokens) of a chunk', () => {
    expect(lens(chunkActions(acts, 1000, 64, 4))).toEqual([[2, 4], [5], [6]]); // 1+2, 2, 4 action rows
    expect(lens(chunkActions(acts, 1000, 2))).toEqual([[2, 4], [5, 6]]);
  });
});
