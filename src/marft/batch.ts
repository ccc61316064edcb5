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
    seq.forEach((id, t) => { ids[b * T + t] = id; mask[b * T + t] = 1; });
    const start = b * T + a.promptIds.length - 1;
    a.actionIds.forEach((id, k) => { targets[start + k] = id; logitRows[at + k] = start + k; logitTargets[at + k] = id; });
    rows.push({ start, count: a.actionIds.length, at });
    at += a.actionIds.length;
  });
  return { B, T, ids, mask, targets, slots: Int32Array.from(actions, (a) => slotOf(a.agent)), rows, logitRows, logitTargets };
}

/** The action rows (generated tokens) of these actions: the logits rows of their batch. */
const actionRowCount = (actions: readonly ActionRecord[]): number => actions.reduce((s, a) => s + a.actionIds.length, 0);

/**
 * Splits actions into chunks whose padded batch stays under `maxTokens` (B * T), `maxRows` sequences and
 * `maxLogitRows` action rows (the logits' memory; default maxTokens, which bounds them already).
 */
export function chunkActions(actions: readonly ActionRecord[], maxTokens: number, maxRows = 64, maxLogitRows = maxTokens): ActionRecord[][] {
  const sorted = [...actions].sort((x, y) => (x.promptIds.length + x.actionIds.length) - (y.promptIds.length + y.actionIds.length));
  const chunks: ActionRecord[][] = [];
  let cur: ActionRecord[] = [];
  let longest = 0;
  let logitRows = 0;
  for (const a of sorted) {
    const len = a.promptIds.length + a.actionIds.length;
    const full = (cur.length + 1) * Math.max(longest, len) > maxTokens || cur.length >= maxRows || logitRows + a.actionIds.length > maxLogitRows;
    if (cur.length && full) {
      chunks.push(cur);
      cur = [];
      longest = 0;
      logitRows = 0;
    }
    cur.push(a);
    longest = Math.max(longest, len);
    logitRows += a.actionIds.length;
  }
  if (cur.length) chunks.push(cur);
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
