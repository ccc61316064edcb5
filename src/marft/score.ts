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

import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import type { Decoder } from '../model/decoder.ts';
import { releaseTokenLogprobs, selectRows, tokenLogprobs } from '../model/heads.ts';
import type { LoraSet } from '../model/lora-set.ts';
import { type ValueHead, releaseValueHeadState, valueHeadForward, valueHeadWatchSlots } from '../model/value-head.ts';
import { type FiniteWatch, type NonFinite, createFiniteWatch, readFiniteWatch, releaseFiniteWatch, watchFinite } from '../model/finite-watch.ts';
import { buildBatch, chunkActions, gatherRows } from './batch.ts';
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
  needRef: boolean;
  /** Called before each chunk; what it throws abandons the scoring (a training run paused or stopped). */
  interrupt?: () => void;
  /** The critic's own trunk (needsCriticTrunk); absent: it reads the reference forward's hidden states. */
  critic?: CriticTrunk;
}

async function logprobsOf(gpu: Gpu, logits: Tensor, targets: Tensor): Promise<{ logp: Float32Array; entropy: Float32Array }> {
  const h = tokenLogprobs(gpu, logits, targets, 'score');
  const out = { logp: await gpu.readF32(h.logp), entropy: await gpu.readF32(h.entropy) };
  releaseTokenLogprobs(gpu, h);
  return out;
}

export async function scoreActions(gpu: Gpu, dec: Decoder, head: ValueHead, actions: readonly ActionRecord[], o: ScoreOptions): Promise<ScoreResult> {
  const C = dec.config.hiddenSize;
  const rowsOf = (a: ActionRecord) => criticRowCount(a, o.level);
  const R = actions.reduce((s, a) => s + rowsOf(a), 0);
  const criticInput = gpu.tensor([Math.max(R, 1), C], 'f32', 'critic.input');
  const criticHead = new Int32Array(R);
  const scores = new Map<ActionRecord, ActionScores>();
  const watch = createFiniteWatch(gpu, 3 + valueHeadWatchSlots(head));
  const bad = new Map<string, number>();
  let next = 0;
  /** The run's interrupt, between chunks: what it throws leaves nothing of this scoring allocated. */
  const interrupt = (): void => {
    try {
      o.interrupt?.();
    } catch (e) {
      gpu.release(criticInput);
      releaseFiniteWatch(gpu, watch);
      throw e;
    }
  };
  for (const chunk of chunkActions(actions, o.maxTokens)) {
    interrupt();
    const batch = buildBatch(chunk, o.slotOf, o.padId);
    const N = batch.B * batch.T;
    const targets = gpu.upload(batch.targets, [N], 'i32', 'score.targets');
    const pol = dec.forward({ B: batch.B, T: batch.T, ids: batch.ids, mask: batch.mask, adapters: o.adapters, slots: batch.slots });
    watchFinite(gpu, watch, 'policy logits', pol.logits!);
    const policy = await logprobsOf(gpu, pol.logits!, targets);
    dec.release(pol);
    const ref = dec.forward({ B: batch.B, T: batch.T, ids: batch.ids, mask: batch.mask, adapters: o.adapters, slots: new Int32Array(batch.B).fill(-1) }, { logits: o.needRef ? 'all' : 'none' });
    if (o.needRef) watchFinite(gpu, watch, 'reference logits', ref.logits!);
    const refLp = o.needRef ? await logprobsOf(gpu, ref.logits!, targets) : null;
    // gather the critic's rows from the trunk's hidden states (its own trunk's: after this loop)
    const rowIds: number[] = [];
    chunk.forEach((a, i) => {
      const r = batch.rows[i];
      for (let k = 0; k < rowsOf(a); k++) rowIds.push(r.start + k);
    });
    let vals: Float32Array = new Float32Array(0);
    let found: NonFinite[];
    if (!o.critic) {
      const hRows = selectRows(gpu, ref.hN, rowIds, 'score.hrows');
      gpu.copy(hRows, criticInput, rowIds.length * C * 4, 0, next * C * 4);
      watchFinite(gpu, watch, "critic input (the frozen trunk's final hidden state)", hRows);
      const hs = valueHeadForward(gpu, head, hRows, watch);
      [vals, found] = await Promise.all([gpu.readF32(hs.values), readFiniteWatch(gpu, watch)]);
      releaseValueHeadState(gpu, hs);
      gpu.release(hRows);
    } else {
      found = await readFiniteWatch(gpu, watch);
    }
    for (const x of found) bad.set(x.where, (bad.get(x.where) ?? 0) + x.count);
    gpu.release(targets);
    dec.release(ref);
    let local = 0;
    chunk.forEach((a, i) => {
      const r = batch.rows[i];
      const n = rowsOf(a);
      const h = o.headOf(a.agent);
      for (let k = 0; k < n; k++) criticHead[next + local + k] = h;
      scores.set(a, {
        oldLogp: gatherRows(policy.logp, r.start, r.count),
        entropy: gatherRows(policy.entropy, r.start, r.count),
        refLogp: refLp ? gatherRows(refLp.logp, r.start, r.count) : [],
        values: o.critic ? [] : Array.from({ length: n }, (_, k) => vals[h * rowIds.length + local + k]), // o.critic: trunkValues
        criticRow: next + local,
      });
      local += n;
    });
    next += local;
  }
  interrupt();
  if (o.critic) await trunkValues(gpu, dec, head, o.critic, actions, scores, criticInput, o, watch, bad);
  releaseFiniteWatch(gpu, watch);
  return { scores, criticInput, criticHead, trunk: o.critic ?? null, level: o.level, nonFinite: [...bad].map(([where, count]) => ({ where, count })) };
}

/** Values (and criticInput rows) from the critic's own trunk pass, written into each action's scores. */
async function trunkValues(
  gpu: Gpu, dec: Decoder, head: ValueHead, trunk: CriticTrunk, actions: readonly ActionRecord[], scores: Map<ActionRecord, ActionScores>,
  criticInput: Tensor, o: ScoreOptions, watch: FiniteWatch, bad: Map<string, number>,
): Promise<void> {
  const C = dec.config.hiddenSize;
  for (const chunk of chunkActions(actions.filter((a) => criticRowCount(a, o.level) > 0), o.maxTokens)) {
    const p = criticPass(gpu, dec, trunk, chunk, o.level, o.padId, false);
    const R = p.rowIds.length;
    watchFinite(gpu, watch, "critic input (the critic trunk's final hidden state)", p.hRows);
    const hs = valueHeadForward(gpu, head, p.hRows, watch);
    const [vals, found] = await Promise.all([gpu.readF32(hs.values), readFiniteWatch(gpu, watch)]);
    for (const x of found) bad.set(x.where, (bad.get(x.where) ?? 0) + x.count);
    let local = 0;
    for (const a of chunk) {
      const s = scores.get(a)!;
      const n = criticRowCount(a, o.level);
      gpu.copy(p.hRows, criticInput, n * C * 4, local * C * 4, s.criticRow * C * 4);
      const h = o.headOf(a.agent);
      s.values = Array.from({ length: n }, (_, k) => vals[h * R + local + k]);
      local += n;
    }
    releaseValueHeadState(gpu, hs);
    gpu.release(p.hRows);
    dec.release(p.fw);
  }
}
