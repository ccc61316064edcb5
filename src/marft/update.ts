// The PPO update on the GPU. Per minibatch: the policy's forward (saved) over the minibatch's actions, the
// model's log-prob/entropy head, then the loss on the CPU from the N log-probs and entropies read back
// (the clipped surrogate, entropy bonus and KL penalty of losses.ts: a few floats per token), whose
// per-token gradients go back up through the head's backward into the logits and the decoder's backward into
// the adapters. The critic trains on the frozen trunk's hidden states gathered at scoring time. AdamW
// steps run on the GPU; their stats (global norm, non-finite flag) are read once per step for the metrics
// and the skip guard, together with a finite watch (finite-watch.ts) over the critic's layers, the logits,
// the gradients and the optimiser state, so a skip names the tensor. Agent-by-agent schedules keep the
// frozen agents' adapter slots (and their Adam moments) exactly as they were.

import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import type { Decoder } from '../model/decoder.ts';
import { releaseTokenLogprobs, selectRows, tokenLogprobs, tokenLogprobsBackward } from '../model/heads.ts';
import { type Optimizer, type OptimizerGroup, clearGrads, optimizerStep, readOptimizerStats } from '../model/optimizer.ts';
import type { Rng } from '../common/rng.ts';
import { releaseValueHeadState, valueHeadBackward, valueHeadForward, valueHeadWatchSlots } from '../model/value-head.ts';
import {
  type FiniteWatch, createFiniteWatch, describeNonFinite, optimizerWatchSlots, readFiniteWatch, releaseFiniteWatch, watchFinite,
  watchGradients, watchOptimizerState,
} from '../model/finite-watch.ts';
import { normalizeAdvantages } from './advantages.ts';
import { buildBatch, chunkActions, gatherRows } from './batch.ts';
import type { RunConfig } from '../config/run-config.ts';
import { actionLevelPolicyLoss, countWords, exceedsTargetKl, ppoPolicyLoss, valueLoss } from './losses.ts';
import type { ActionRecord } from './rollout.ts';
import type { ScoreResult } from './score.ts';
import type { TrainState } from './state.ts';
import type { IterationMetrics } from '../config/metrics.ts';
import type { ActionTargets } from './advantage-targets.ts';

export interface UpdateStats extends Pick<IterationMetrics, 'policyLoss' | 'valueLoss' | 'entropy' | 'approxKl' | 'klToRef' | 'clipFraction' | 'skipped'> {
  policySteps: number;
  criticSteps: number;
}

export interface UpdateOptions {
  trainPolicy: boolean;
  /** Agents whose adapters train (indices); the others' actions are left out of the policy loss. */
  trainAgents: number[];
  slotOf: (agent: number) => number;
  padId: number;
  rng: Rng;
  /** Upper bound on B*T of one forward (micro-batches of a minibatch). */
  maxTokens: number;
  /** Recompute each layer's activations in backward instead of keeping them (activation checkpointing). */
  recompute?: boolean;
}

function shuffle<T>(xs: T[], rng: Rng): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

const split = <T>(xs: T[], k: number): T[][] => {
  const n = Math.max(1, Math.min(k, xs.length));
  return Array.from({ length: n }, (_, i) => xs.slice(Math.floor((i * xs.length) / n), Math.floor(((i + 1) * xs.length) / n))).filter((c) => c.length);
};

/** Records fn, then restores the slots not in `keep` of every (S, ...) parameter and its Adam moments. */
function keepFrozenSlots(gpu: Gpu, groups: OptimizerGroup[], slots: number, keep: Set<number>, fn: () => void): void {
  const frozen = Array.from({ length: slots }, (_, s) => s).filter((s) => !keep.has(s));
  if (!frozen.length) { fn(); return; }
  const saved: Array<{ t: Tensor; copy: Tensor; s: number; bytes: number }> = [];
  for (const g of groups) {
    for (const t of [g.params, g.m, g.v]) {
      const bytes = (t.shape.slice(1).reduce((a, b) => a * b, 1)) * 4;
      for (const s of frozen) {
        const copy = gpu.tensor([bytes / 4], 'f32', 'frozen.slot');
        gpu.copy(t, copy, bytes, s * bytes, 0);
        saved.push({ t, copy, s, bytes });
      }
    }
  }
  fn();
  for (const { t, copy, s, bytes } of saved) { gpu.copy(copy, t, bytes, 0, s * bytes); gpu.release(copy); }
}

/** Records a clipped AdamW step (a no-op on the GPU when the gradient is not finite) and zeroes the grads; `w` watches the gradients and the state it leaves. */
function recordStep(gpu: Gpu, o: Optimizer, lr: number, cfg: RunConfig['ppo'], w: FiniteWatch): void {
  watchGradients(gpu, w, o);
  optimizerStep(gpu, o, { lr, eps: cfg.adamEps, weightDecay: cfg.weightDecay, maxNorm: cfg.maxGradNorm });
  watchOptimizerState(gpu, w, o);
  clearGrads(gpu, o);
}

/**
 * The step's stats and its watch, read together: whether the step was taken, and a note naming the
 * non-finite tensors (the gradients of a skipped step; the parameters or moments a taken step left).
 */
async function readStep(gpu: Gpu, o: Optimizer, w: FiniteWatch, what: string): Promise<{ stepped: boolean; note: string | null }> {
  const [r, bad] = await Promise.all([readOptimizerStats(gpu, o), readFiniteWatch(gpu, w)]);
  const grads = bad.filter((x) => o.groups.some((g) => g.grads.label === x.where));
  const rest = bad.filter((x) => !grads.includes(x));
  if (r.skipped) return { stepped: false, note: `${what} step skipped (non-finite gradient)${grads.length ? ` in ${describeNonFinite(grads)}` : ''}` };
  return { stepped: true, note: rest.length ? `${what} step left non-finite optimiser state in ${describeNonFinite(rest)}` : null };
}

export async function ppoUpdate(
  gpu: Gpu, dec: Decoder, state: TrainState, actions: ActionRecord[], score: ScoreResult,
  targets: Map<ActionRecord, ActionTargets>, o: UpdateOptions,
): Promise<UpdateStats> {
  const cfg = state.config;
  const ppo = cfg.ppo;
  const st: UpdateStats = { policyLoss: 0, valueLoss: 0, entropy: 0, approxKl: 0, klToRef: 0, clipFraction: 0, skipped: [], policySteps: 0, criticSteps: 0 };
  const useCritic = cfg.algo === 'ppo';
  const policyActs = actions.filter((a) => o.trainAgents.includes(a.agent) && a.actionIds.length > 0);
  const watch = createFiniteWatch(gpu, Math.max(valueHeadWatchSlots(state.critic), optimizerWatchSlots(state.criticOptim), optimizerWatchSlots(state.policyOptim), 1));
  let stop = false;
  let nPol = 0;
  let nVal = 0;
  for (let epoch = 0; epoch < ppo.epochs && !stop; epoch++) {
    const order = shuffle(actions, o.rng);
    for (const mb of split(order, ppo.minibatches)) {
      // ---- critic ----
      if (useCritic) {
        const rows: number[] = [];
        const returns: number[] = [];
        const oldValues: number[] = [];
        for (const a of mb) {
          const s = score.scores.get(a)!;
          const t = targets.get(a)!;
          t.returns.forEach((r, k) => { rows.push(s.criticRow + k); returns.push(r); oldValues.push(s.values[k]); });
        }
        if (rows.length) {
          const R = rows.length;
          const x = selectRows(gpu, score.criticInput, rows, 'critic.x');
          const hs = valueHeadForward(gpu, state.critic, x, watch);
          const [all, bad] = await Promise.all([gpu.readF32(hs.values), readFiniteWatch(gpu, watch)]);
          const heads = rows.map((r) => score.criticHead[r]);
          const values = rows.map((_, i) => all[heads[i] * R + i]);
          const vl = valueLoss({ values, oldValues, returns, clip: ppo.valueClip, kind: ppo.valueLoss, huberDelta: ppo.huberDelta });
          if (bad.length) {
            st.skipped.push(`epoch ${epoch}: critic step skipped (non-finite values in ${describeNonFinite(bad)})`);
          } else if (Number.isFinite(vl.loss)) {
            const dv = new Float32Array(state.critic.heads.length * R);
            heads.forEach((h, i) => { dv[h * R + i] = vl.dValues[i]; });
            const dvT = gpu.upload(dv, [state.critic.heads.length, R], 'f32', 'critic.dv');
            const ones = gpu.upload(new Float32Array(R).fill(1), [1, R], 'f32', 'critic.ones');
            valueHeadBackward(gpu, state.critic, hs, dvT, null, ones);
            gpu.release(dvT, ones);
            recordStep(gpu, state.criticOptim, ppo.criticLr, ppo, watch);
            const step = await readStep(gpu, state.criticOptim, watch, 'critic');
            if (step.note) st.skipped.push(`epoch ${epoch}: ${step.note}`);
            if (step.stepped) st.criticSteps++;
            st.valueLoss += vl.loss;
            nVal++;
          } else {
            st.skipped.push(`epoch ${epoch}: critic step skipped (value loss ${vl.loss})`);
          }
          releaseValueHeadState(gpu, hs);
          gpu.release(x);
        }
      }
      // ---- policy ----
      const pm = mb.filter((a) => policyActs.includes(a));
      if (!o.trainPolicy || !pm.length) continue;
      const r = await policyMinibatch(gpu, dec, state, pm, score, targets, o, epoch, watch);
      if (r.counted) {
        st.entropy += r.entropy;
        st.approxKl += r.approxKl;
        st.klToRef += r.kl;
        st.clipFraction += r.clipFraction;
        nPol++;
      }
      if (r.skipped) st.skipped.push(r.skipped);
      if (r.stop) stop = true;
      if (r.stepped) { st.policyLoss += r.loss; st.policySteps++; }
      if (stop) break;
    }
  }
  releaseFiniteWatch(gpu, watch);
  const avg = (x: number, n: number) => (n ? x / n : 0);
  return {
    ...st, policyLoss: avg(st.policyLoss, st.policySteps), valueLoss: avg(st.valueLoss, nVal), entropy: avg(st.entropy, nPol),
    approxKl: avg(st.approxKl, nPol), klToRef: avg(st.klToRef, nPol), clipFraction: avg(st.clipFraction, nPol),
  };
}

interface MinibatchResult {
  counted: boolean;
  loss: number;
  entropy: number;
  approxKl: number;
  kl: number;
  clipFraction: number;
  stepped: boolean;
  stop: boolean;
  skipped: string | null;
}

/**
 * One policy step over a minibatch, in micro-batches whose logits fit the token budget (gradients
 * accumulate across them; each loss is divided by the whole minibatch's count, so their sum is the
 * minibatch's mean). The step is taken only if every micro-batch's loss is finite and the approximate KL
 * stays under the target.
 */
async function policyMinibatch(
  gpu: Gpu, dec: Decoder, state: TrainState, pm: ActionRecord[], score: ScoreResult, targets: Map<ActionRecord, ActionTargets>,
  o: UpdateOptions, epoch: number, watch: FiniteWatch,
): Promise<MinibatchResult> {
  const cfg = state.config;
  const ppo = cfg.ppo;
  const actionLevel = cfg.level === 'action' && cfg.algo === 'ppo';
  const { advOf, Z } = minibatchAdvantages(pm, targets, cfg);
  const withKl = ppo.klCoef > 0;
  const res: MinibatchResult = { counted: false, loss: 0, entropy: 0, approxKl: 0, kl: 0, clipFraction: 0, stepped: false, stop: false, skipped: null };
  let finite = true;
  let badLogits = 0;
  for (const chunk of chunkActions(pm, o.maxTokens)) {
    const batch = buildBatch(chunk, o.slotOf, o.padId);
    const N = batch.B * batch.T;
    const fw = dec.forward({ B: batch.B, T: batch.T, ids: batch.ids, mask: batch.mask, adapters: state.policy, slots: batch.slots }, { save: o.recompute ? 'checkpoint' : true });
    const targetsT = gpu.upload(batch.targets, [N], 'i32', 'ppo.targets');
    watchFinite(gpu, watch, 'policy logits', fw.logits!);
    const head = tokenLogprobs(gpu, fw.logits!, targetsT, 'ppo');
    const [lp, en, bad] = await Promise.all([gpu.readF32(head.logp), gpu.readF32(head.entropy), readFiniteWatch(gpu, watch)]);
    for (const x of bad) badLogits += x.count;
    const tok = { logp: [] as number[], old: [] as number[], ent: [] as number[], ref: [] as number[], adv: [] as number[] };
    const spans: Array<{ agent: number; start: number; end: number }> = [];
    chunk.forEach((a, i) => {
      const r = batch.rows[i];
      const s = score.scores.get(a)!;
      const start = tok.logp.length;
      tok.logp.push(...gatherRows(lp, r.start, r.count));
      tok.ent.push(...gatherRows(en, r.start, r.count));
      tok.old.push(...s.oldLogp);
      tok.ref.push(...(s.refLogp.length ? s.refLogp : s.oldLogp));
      tok.adv.push(...advOf.get(a)!);
      spans.push({ agent: a.agent, start, end: tok.logp.length });
    });
    const common = { clip: ppo.clip, entropyCoef: ppo.entropyCoef, klCoef: ppo.klCoef, klEstimator: ppo.klEstimator, normalizer: Z };
    let loss: number;
    let dLogp: Float64Array;
    let dEnt: Float64Array;
    let r: { entropy: number; approxKl: number; kl: number; clipFraction: number };
    if (actionLevel) {
      const x = actionLevelPolicyLoss({
        ...common, tokenLogp: tok.logp, oldTokenLogp: tok.old, spans, advantages: tok.adv, norm: ppo.logProbNorm,
        wordCounts: chunk.map((a) => Math.max(1, countWords(a.text))), tokenEntropy: tok.ent, refTokenLogp: withKl ? tok.ref : undefined,
      });
      [loss, dLogp, dEnt, r] = [x.loss, x.dTokenLogp, x.dTokenEntropy, x];
    } else {
      const x = ppoPolicyLoss({ ...common, logp: tok.logp, oldLogp: tok.old, advantages: tok.adv, entropy: tok.ent, refLogp: withKl ? tok.ref : undefined });
      [loss, dLogp, dEnt, r] = [x.loss, x.dLogp, x.dEntropy, x];
    }
    // loss, entropy and KL are divided by Z already; approx KL and clip fraction are chunk means: weight them
    const w = (actionLevel ? chunk.length : tok.logp.length) / Z;
    res.loss += loss;
    res.entropy += r.entropy; // already divided by Z
    res.kl += r.kl;
    res.approxKl += w * r.approxKl;
    res.clipFraction += w * r.clipFraction;
    res.counted = true;
    if (!Number.isFinite(loss) || badLogits) finite = false;
    if (finite) {
      const dl = new Float32Array(N);
      const de = new Float32Array(N);
      chunk.forEach((_, i) => {
        const row = batch.rows[i];
        for (let k = 0; k < row.count; k++) { dl[row.start + k] = dLogp[spans[i].start + k]; de[row.start + k] = dEnt[spans[i].start + k]; }
      });
      tokenLogprobsBackward(gpu, head, fw.logits!, dl, de);
      dec.backward(fw, fw.logits!, null);
    }
    releaseTokenLogprobs(gpu, head);
    gpu.release(targetsT);
    dec.release(fw);
  }
  if (badLogits) {
    res.skipped = `epoch ${epoch}: policy step skipped (non-finite values in policy logits (${badLogits} values))`;
  } else if (!finite) {
    res.skipped = `epoch ${epoch}: policy step skipped (loss ${res.loss})`;
  } else if (exceedsTargetKl(res.approxKl, ppo.targetKl)) {
    res.skipped = `epoch ${epoch}: policy step skipped and update stopped (approx KL ${res.approxKl.toExponential(2)} > target ${ppo.targetKl})`;
    res.stop = true;
  } else {
    const keep = new Set(o.trainAgents.map(o.slotOf));
    keepFrozenSlots(gpu, state.policyOptim.groups, state.policy.spec.slots, keep, () => recordStep(gpu, state.policyOptim, ppo.lr, ppo, watch));
    const step = await readStep(gpu, state.policyOptim, watch, 'policy');
    if (step.note) res.skipped = `epoch ${epoch}: ${step.note}`;
    res.stepped = step.stepped;
  }
  clearGrads(gpu, state.policyOptim);
  return res;
}

/**
 * The advantages a policy minibatch trains on, per action (one entry at action level with PPO, else one
 * per generated token), and Z, their count (the loss's normaliser). PPO with ppo.advantageNorm normalises
 * them over the whole minibatch (normalizeAdvantages); GRPO's are used exactly as computeTargets gave them,
 * already normalised within their group, whatever advantageNorm says (a second, minibatch-wide
 * normalisation would give a group with equal rewards a non-zero advantage).
 */
export function minibatchAdvantages(
  pm: readonly ActionRecord[], targets: Map<ActionRecord, ActionTargets>, cfg: RunConfig,
): { advOf: Map<ActionRecord, number[]>; Z: number } {
  const actionLevel = cfg.level === 'action' && cfg.algo === 'ppo';
  const flat = actionLevel ? pm.map((a) => targets.get(a)!.advantages[0]) : pm.flatMap((a) => targets.get(a)!.advantages);
  const norm = cfg.algo === 'ppo' && cfg.ppo.advantageNorm ? Array.from(normalizeAdvantages(flat)) : flat;
  const advOf = new Map<ActionRecord, number[]>();
  let at = 0;
  for (const a of pm) {
    const n = actionLevel ? 1 : a.actionIds.length;
    advOf.set(a, norm.slice(at, at + n));
    at += n;
  }
  return { advOf, Z: actionLevel ? pm.length : at };
}
