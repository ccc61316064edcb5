// The scoring phase between rollout and update: for every action, under the current adapters, the
// log-prob of each generated token (the PPO "old" policy at temperature 1, recomputed because sampling may
// use another temperature or truncation); under the reference policy (slot -1, the base model) the same
// log-probs for the KL penalty, and the frozen trunk's final hidden states at the action rows, which are the
// critic's inputs. They are gathered into one GPU tensor kept for the whole update (the trunk is frozen, so
// they do not change across epochs), and the critic's current values are read once for GAE. A critic that
// reads the whole episode, or runs its own LoRA, gets its rows from its own trunk pass (critic.ts) instead;
// the LoRA critic's update recomputes them (its trunk trains), so criticInput is then left unused.
// A finite watch counts the non-finite values of the logits, the critic's input and each critic layer,
// read with the values: `nonFinite` names where they appeared (the trainer then skips the update).
// Nothing in scoring depends on a value read back (the weights do not change), so every chunk's log-probs,
// values and watch go into one ReadQueue and the scoring waits once, at its end: one readback per call.

import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import type { BatchInput } from '../model/batch.ts';
import type { Decoder } from '../model/decoder.ts';
import { releaseTokenLogprobs, selectRows, tokenLogprobs } from '../model/heads.ts';
import type { LoraSet } from '../model/lora-set.ts';
import { type ValueHead, releaseValueHeadState, valueHeadForward, valueHeadWatchSlots } from '../model/value-head.ts';
import {
  type FiniteWatch,
  type NonFinite,
  createFiniteWatch,
  releaseFiniteWatch,
  snapshotFiniteWatch,
  watchFinite,
} from '../model/finite-watch.ts';
import { type Later, ReadQueue } from '../gpu/readback.ts';
import { type ActionBatch, CHUNK_MAX_ROWS, buildBatch, chunkActions, gatherRows } from './batch.ts';
import { type CriticTrunk, criticPass, criticRowCount } from './critic.ts';
import type { ActionRecord } from './rollout.ts';

export interface ActionScores {
  oldLogp: number[];
  refLogp: number[];
  entropy: number[];
  /** Token level: V before each generated token; action level: one value, V(o). */
  values: number[];
  /** First row of this action's critic inputs in ScoreResult.criticInput. */
  criticRow: number;
}

export interface ScoreResult {
  scores: Map<ActionRecord, ActionScores>;
  /** (R, C) final hidden states of the frozen trunk at the critic's rows. */
  criticInput: Tensor;
  /** Head index of each critic row (the agent's head in per-agent mode, else 0). */
  criticHead: Int32Array;
  /** The critic's own trunk pass (episode input or critic LoRA), or null: the scoring forward's rows. */
  trunk: CriticTrunk | null;
  level: 'action' | 'token';
  /** Where scoring met NaN / ±Inf (logits, the critic's input or one of its layers), with the counts. */
  nonFinite: NonFinite[];
}

export interface ScoreOptions {
  level: 'action' | 'token';
  /** The policy's adapters (slotOf indexes them; the reference forward runs the same set with slot -1). */
  adapters: LoraSet;
  slotOf: (agent: number) => number;
  headOf: (agent: number) => number;
  padId: number;
  /** Upper bound on B*T per forward (memory). */
  maxTokens: number;
  /** Upper bound on the action rows whose logits one forward takes (the logits' memory); default maxTokens. */
  maxLogitRows?: number;
  needRef: boolean;
  /** Called before each chunk; what it throws abandons the scoring (a training run paused or stopped). */
  interrupt?: () => void;
  /** The critic's own trunk (needsCriticTrunk); absent: it reads the reference forward's hidden states. */
  critic?: CriticTrunk;
}

/**
 * The forward's input for one chunk: its policy half (the batch with the agents' slots) and/or its reference
 * half (the same sequences with slot -1), in that order; null when neither is needed.
 */
function stackHalves(b: ActionBatch, policy: boolean, ref: boolean): Omit<BatchInput, 'adapters'> | null {
  const n = (policy ? 1 : 0) + (ref ? 1 : 0);
  if (!n) return null;
  const N = b.B * b.T;
  const ids = new Int32Array(n * N);
  const mask = new Int32Array(n * N);
  const slots = new Int32Array(n * b.B).fill(-1);
  for (let h = 0; h < n; h++) {
    ids.set(b.ids, h * N);
    mask.set(b.mask, h * N);
  }
  if (policy) slots.set(b.slots);
  return { B: n * b.B, T: b.T, ids, mask, slots };
}

/** The head's log-probs (and entropies) of `logits`, snapshotted into `q`; the head's tensors are released. */
function logprobsOf(
  gpu: Gpu,
  q: ReadQueue,
  logits: Tensor,
  targets: Tensor,
  entropy: boolean,
): { logp: Later<Float32Array>; entropy: Later<Float32Array> | null } {
  const h = tokenLogprobs(gpu, logits, targets, 'score');
  const out = { logp: q.snapshot(h.logp, f32), entropy: entropy ? q.snapshot(h.entropy, f32) : null };
  releaseTokenLogprobs(gpu, h);
  return out;
}

const f32 = (x: ArrayLike<number>): Float32Array => (x instanceof Float32Array ? x : Float32Array.from(x));

export async function scoreActions(
  gpu: Gpu,
  dec: Decoder,
  head: ValueHead,
  actions: readonly ActionRecord[],
  o: ScoreOptions,
): Promise<ScoreResult> {
  const C = dec.config.hiddenSize;
  const rowsOf = (a: ActionRecord) => criticRowCount(a, o.level);
  const R = actions.reduce((s, a) => s + rowsOf(a), 0);
  const criticInput = gpu.tensor([Math.max(R, 1), C], 'f32', 'critic.input');
  const criticHead = new Int32Array(R);
  const scores = new Map<ActionRecord, ActionScores>();
  const watch = createFiniteWatch(gpu, 3 + valueHeadWatchSlots(head));
  const q = new ReadQueue(gpu);
  /** Per chunk, in order: what its watch found and the scores it fills in, once the queue is read. */
  const chunks: Array<{ found: Later<NonFinite[]>; fill: () => void }> = [];
  /** Each action's first row in criticInput (ActionScores.criticRow). */
  const rowOf = new Map<ActionRecord, number>();
  let next = 0;
  /** The run's interrupt, between chunks: what it throws leaves nothing of this scoring allocated. */
  const interrupt = (): void => {
    try {
      o.interrupt?.();
    } catch (e) {
      gpu.release(criticInput);
      releaseFiniteWatch(gpu, watch);
      q.release();
      throw e;
    }
  };
  // The reference policy is the base model (slot -1) on the same sequences: policy and reference run as one
  // forward over both halves, twice the rows a matmul (the 135M iteration's products fill the GPU better,
  // and each layer is one set of dispatches); each chunk then holds half the tokens and sequences.
  const halves = o.needRef || !o.critic ? 2 : 1;
  for (const chunk of chunkActions(actions, Math.max(1, Math.floor(o.maxTokens / halves)), CHUNK_MAX_ROWS / halves, o.maxLogitRows)) {
    interrupt();
    const batch = buildBatch(chunk, o.slotOf, o.padId);
    const M = batch.logitRows.length;
    const N = batch.B * batch.T;
    // logits at the action rows only; a chunk of empty actions has none, and no log-probs to take
    const withPolicy = M > 0;
    const withRef = o.needRef && withPolicy;
    // the reference half: for its log-probs, and for the frozen trunk's hidden states unless the critic has its own trunk
    const withTrunk = !o.critic;
    const stack = stackHalves(batch, withPolicy, withRef || withTrunk);
    const st = stack ? dec.forward({ ...stack, adapters: o.adapters }, { logits: 'none' }) : null;
    const refAt = withPolicy ? N : 0; // the reference half's first row
    const targets = withPolicy ? gpu.upload(batch.logitTargets, [M], 'i32', 'score.targets') : null;
    const headLogprobs = (rows: Int32Array, where: string, entropy: boolean): ReturnType<typeof logprobsOf> => {
      const h = dec.logitsAt(st!, rows);
      gpu.release(h.hRows);
      watchFinite(gpu, watch, where, h.logits);
      const lp = logprobsOf(gpu, q, h.logits, targets!, entropy);
      gpu.release(h.logits);
      return lp;
    };
    const policy = withPolicy ? headLogprobs(batch.logitRows, 'policy logits', true) : null;
    const refLp = withRef
      ? headLogprobs(
          batch.logitRows.map((r) => r + refAt),
          'reference logits',
          false,
        )
      : null;
    // gather the critic's rows from the trunk's hidden states (its own trunk's: after this loop)
    const rowIds: number[] = [];
    chunk.forEach((a, i) => {
      const r = batch.rows[i];
      for (let k = 0; k < rowsOf(a); k++) rowIds.push(r.start + k);
    });
    let vals: Later<Float32Array> | null = null;
    if (withTrunk && rowIds.length) {
      const hRows = selectRows(
        gpu,
        st!.hN,
        rowIds.map((r) => r + refAt),
        'score.hrows',
      );
      gpu.copy(hRows, criticInput, rowIds.length * C * 4, 0, next * C * 4);
      watchFinite(gpu, watch, "critic input (the frozen trunk's final hidden state)", hRows);
      const hs = valueHeadForward(gpu, head, hRows, watch);
      vals = q.snapshot(hs.values, f32);
      releaseValueHeadState(gpu, hs);
      gpu.release(hRows);
    }
    const found = snapshotFiniteWatch(gpu, watch, q);
    gpu.release(targets ?? undefined);
    if (st) dec.release(st);
    const first = next;
    for (const a of chunk) {
      rowOf.set(a, next);
      next += rowsOf(a);
    }
    chunks.push({
      found,
      fill: () => {
        const [lp, en, rlp, v] = [policy?.logp.get() ?? [], policy?.entropy!.get() ?? [], refLp?.logp.get(), vals?.get()];
        let local = 0;
        chunk.forEach((a, i) => {
          const r = batch.rows[i];
          const n = rowsOf(a);
          const h = o.headOf(a.agent);
          for (let k = 0; k < n; k++) criticHead[first + local + k] = h;
          scores.set(a, {
            oldLogp: gatherRows(lp, r.at, r.count),
            entropy: gatherRows(en, r.at, r.count),
            refLogp: rlp ? gatherRows(rlp, r.at, r.count) : [],
            values: v ? Array.from({ length: n }, (_, k) => v[h * rowIds.length + local + k]) : [], // o.critic: trunkValues
            criticRow: first + local,
          });
          local += n;
        });
      },
    });
  }
  interrupt();
  const trunk = o.critic ? trunkValues(gpu, dec, head, o.critic, actions, scores, rowOf, criticInput, o, watch, q) : [];
  // the one wait of the scoring: every chunk's log-probs, values and watch
  try {
    await q.flush();
  } finally {
    releaseFiniteWatch(gpu, watch);
  }
  const bad = new Map<string, number>();
  for (const c of [...chunks, ...trunk]) {
    c.fill();
    for (const x of c.found.get()) bad.set(x.where, (bad.get(x.where) ?? 0) + x.count);
  }
  return {
    scores,
    criticInput,
    criticHead,
    trunk: o.critic ?? null,
    level: o.level,
    nonFinite: [...bad].map(([where, count]) => ({ where, count })),
  };
}

/**
 * Records the critic's own trunk pass (values, and criticInput rows at each action's criticRow); per chunk,
 * what its watch found and a fill that writes the values into each action's scores once the queue is read
 * (after the scoring chunks' fills, which make the scores).
 */
function trunkValues(
  gpu: Gpu,
  dec: Decoder,
  head: ValueHead,
  trunk: CriticTrunk,
  actions: readonly ActionRecord[],
  scores: Map<ActionRecord, ActionScores>,
  rowOf: Map<ActionRecord, number>,
  criticInput: Tensor,
  o: ScoreOptions,
  watch: FiniteWatch,
  q: ReadQueue,
): Array<{ found: Later<NonFinite[]>; fill: () => void }> {
  const C = dec.config.hiddenSize;
  const out: Array<{ found: Later<NonFinite[]>; fill: () => void }> = [];
  for (const chunk of chunkActions(
    actions.filter((a) => criticRowCount(a, o.level) > 0),
    o.maxTokens,
  )) {
    const p = criticPass(gpu, dec, trunk, chunk, o.level, o.padId, false);
    const R = p.rowIds.length;
    watchFinite(gpu, watch, "critic input (the critic trunk's final hidden state)", p.hRows);
    const hs = valueHeadForward(gpu, head, p.hRows, watch);
    const vals = q.snapshot(hs.values, f32);
    const found = snapshotFiniteWatch(gpu, watch, q);
    let local = 0;
    for (const a of chunk) {
      const n = criticRowCount(a, o.level);
      gpu.copy(p.hRows, criticInput, n * C * 4, local * C * 4, rowOf.get(a)! * C * 4);
      local += n;
    }
    out.push({
      found,
      fill: () => {
        const v = vals.get();
        let k0 = 0;
        for (const a of chunk) {
          const n = criticRowCount(a, o.level);
          const h = o.headOf(a.agent);
          scores.get(a)!.values = Array.from({ length: n }, (_, k) => v[h * R + k0 + k]);
          k0 += n;
        }
      },
    });
    releaseValueHeadState(gpu, hs);
    gpu.release(p.hRows);
    dec.release(p.fw);
  }
  return out;
}
