// Padded GPU batches of actions: each action is the sequence prompt ++ generated tokens, right-padded to
// the batch's longest. The logit at position P-1+k predicts generated token k, so "action rows" are those
// positions; they carry the targets for the log-prob kernel (-1 elsewhere) and, at token level, the
// critic's value of the state before token k. Scoring and the update take logits at the action rows only
// (logitRows: the LM head and the log-softmax skip the prompts and the padding, and the logits' memory
// bounds the rows scored, not the tokens a forward runs).

import type { ActionRecord } from './rollout.ts';

export interface ActionBatch {
  B: number;
  T: number;
  ids: Int32Array; // (B*T)
  mask: Int32Array; // (B*T)
  targets: Int32Array; // (B*T), -1 off action rows
  slots: Int32Array; // (B)
  /** For action i of the batch: its first action row (b*T + P - 1), its token count, and `at`, the first of its rows in logitRows. */
  rows: Array<{ start: number; count: number; at: number }>;
  /** (M) the action rows of all actions, in order: the rows whose logits are taken (Decoder ForwardOptions.logitRows). */
  logitRows: Int32Array;
  /** (M) the target token of each of logitRows. */
  logitTargets: Int32Array;
}

export function buildBatch(actions: readonly ActionRecord[], slotOf: (agent: number) => number, padId: number): ActionBatch {
  const B = actions.length;
  const T = Math.max(...actions.map((a) => a.promptIds.length + a.actionIds.length));
  const ids = new Int32Array(B * T).fill(padId);
  const mask = new Int32Array(B * T);
  const targets = new Int32Array(B * T).fill(-1);
  const M = actionRowCount(actions);
  const logitRows = new Int32Array(M);
  const logitTargets = new Int32Array(M);
  const rows: ActionBatch['rows'] = [];
  let at = 0;
  actions.forEach((a, b) => {
    const seq = [...a.promptIds, ...a.actionIds];
    seq.forEach((id, t) => {
      ids[b * T + t] = id;
      mask[b * T + t] = 1;
    });
    const start = b * T + a.promptIds.length - 1;
    a.actionIds.forEach((id, k) => {
      targets[start + k] = id;
      logitRows[at + k] = start + k;
      logitTargets[at + k] = id;
    });
    rows.push({ start, count: a.actionIds.length, at });
    at += a.actionIds.length;
  });
  return { B, T, ids, mask, targets, slots: Int32Array.from(actions, (a) => slotOf(a.agent)), rows, logitRows, logitTargets };
}

/** The action rows (generated tokens) of these actions: the logits rows of their batch. */
const actionRowCount = (actions: readonly ActionRecord[]): number => actions.reduce((s, a) => s + a.actionIds.length, 0);

/**
 * A forward's cost beyond its padded tokens, counted in tokens, for chunkActions: one more chunk must save at
 * least this much padding. On an H200, a 135M forward of 8 x 192 tokens took 25 ms and one of 16 x 192 took
 * 40 ms, so a forward's fixed part was worth about 1 000 tokens there (bench/results/iteration/same-sequences/1-score); smaller
 * models pay relatively more per dispatch. 512 keeps chunks few without giving up large savings.
 */
export const CHUNK_COST_TOKENS = 512;

/** The most sequences a chunk holds by default (chunkActions' maxRows). */
export const CHUNK_MAX_ROWS = 64;

/**
 * Splits actions into chunks whose padded batch stays under `maxTokens` (B * T), `maxRows` sequences and
 * `maxLogitRows` action rows (the logits' memory; default maxTokens, which bounds them already); an action
 * past a bound alone forms its own chunk. Of the splits of the actions sorted by length into runs, it takes
 * the one of least padded tokens plus CHUNK_COST_TOKENS a chunk (a dynamic programme over the runs' ends):
 * the first fit would pad a planner's short sequences to the solver's long ones where a batch holds both.
 */
export function chunkActions(
  actions: readonly ActionRecord[],
  maxTokens: number,
  maxRows = CHUNK_MAX_ROWS,
  maxLogitRows = maxTokens,
): ActionRecord[][] {
  const sorted = [...actions].sort((x, y) => x.promptIds.length + x.actionIds.length - (y.promptIds.length + y.actionIds.length));
  const n = sorted.length;
  const len = sorted.map((a) => a.promptIds.length + a.actionIds.length);
  // best[i]: the least cost of chunking sorted[0, i); from[i]: where its last chunk starts
  const best = new Float64Array(n + 1).fill(Infinity);
  const from = new Int32Array(n + 1);
  best[0] = 0;
  for (let i = 1; i <= n; i++) {
    let rows = 0;
    for (let j = i - 1; j >= 0; j--) {
      // the last chunk is sorted[j, i): its longest is sorted[i - 1]; bounds only grow as j falls
      rows += sorted[j].actionIds.length;
      const B = i - j;
      if (B > 1 && (B * len[i - 1] > maxTokens || B > maxRows || rows > maxLogitRows)) break;
      const cost = best[j] + B * len[i - 1] + CHUNK_COST_TOKENS;
      if (cost <= best[i]) {
        best[i] = cost;
        from[i] = j;
      }
    }
  }
  const chunks: ActionRecord[][] = [];
  for (let i = n; i > 0; i = from[i]) chunks.unshift(sorted.slice(from[i], i));
  return chunks;
}

/**
 * Gathers the values at the given flat rows of a batch tensor read back from the GPU. A plain loop: the
 * update gathers every trained token's log-prob and entropy this way, and `Array.from({ length }, fn)` cost
 * about 1 µs a value there (70 ms of the duo preset's update).
 */
export function gatherRows(all: ArrayLike<number>, start: number, count: number): number[] {
  const out: number[] = [];
  for (let k = 0; k < count; k++) out.push(all[start + k]);
  return out;
}
