// The PPO update on the GPU. Per minibatch: the policy's forward (saved) over the minibatch's actions, the
// model's log-prob/entropy head, then the loss on the CPU from the N log-probs and entropies read back
// (the clipped surrogate, entropy bonus and KL penalty of losses.ts: a few floats per token), whose
// per-token gradients go back up through the head's backward into the logits and the decoder's backward into
// the adapters. The critic trains on the frozen trunk's hidden states gathered at scoring time, or, with a
// critic LoRA, on its own trunk's forward and backward each minibatch (critic.ts). AdamW steps run on the
// GPU; their stats (gradient norms, non-finite flags) are read once per step for the metrics and the skip
// guard, together with a finite watch (finite-watch.ts) over the critic's layers, the logits, the gradients
// and the optimiser state, so a skip names the tensor. A minibatch whose approximate KL passes the target
// (targetKlOf) skips its policy step only, as the legacy MARFT trainers (appo_trainer.py / tppo_trainer.py
// return before the policy step, after the critic's): the critic and the later minibatches train on. The
// policy's optimiser keeps a state per adapter slot (each agent clipped by its own gradient norm, with its
// own step count); agent-by-agent schedules step only the training agents' slots, so the frozen agents'
// adapters, Adam moments and counts stay exactly as they were.

import type { Gpu } from '../gpu/gpu.ts';
import type { Decoder } from '../model/decoder.ts';
import { releaseTokenLogprobs, tokenLogprobs, tokenLogprobsBackward } from '../model/heads.ts';
import { type Optimizer, clearGrads, optimizerStep, readOptimizerStats, readSlotStats } from '../model/optimizer.ts';
import type { Rng } from '../common/rng.ts';
import { valueHeadWatchSlots } from '../model/value-head.ts';
import {
  type FiniteWatch, type NonFinite, createFiniteWatch, describeNonFinite, optimizerWatchSlots, readFiniteWatch, releaseFiniteWatch, watchFinite,
  watchGradients, watchOptimizerState,
} from '../model/finite-watch.ts';
import { normalizeAdvantages } from './advantages.ts';
import { buildBatch, chunkActions, gatherRows } from './batch.ts';
import { type RunConfig, actionLevelLoss, targetKlOf } from '../config/run-config.ts';
import { actionLevelPolicyLoss, countWords, exceedsTargetKl, ppoPolicyLoss } from './losses.ts';
import type { ActionRecord } from './rollout.ts';
import type { ScoreResult } from './score.ts';
import type { TrainState } from './state.ts';
import type { IterationMetrics } from '../config/metrics.ts';
import type { ActionTargets } from './advantage-targets.ts';
import { criticHeadBackward, criticLoraBackward } from './critic.ts';

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
  /** Called before each minibatch; what it throws abandons the update (a training run paused or stopped). */
  interrupt?: () => void;
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

/**
 * Records a clipped AdamW step (a no-op on the GPU for a slot whose gradient is not finite) and zeroes the
 * grads; `w` watches the gradients and the state it leaves. `slots`: the adapter slots that step (default
 * all); the others are left exactly as they were.
 */
function recordStep(gpu: Gpu, o: Optimizer, lr: number, cfg: RunConfig['ppo'], w: FiniteWatch, slots?: readonly number[]): void {
  watchGradients(gpu, w, o);
  optimizerStep(gpu, o, { lr, eps: cfg.adamEps, weightDecay: cfg.weightDecay, maxNorm: cfg.maxGradNorm }, slots);
  watchOptimizerState(gpu, w, o);
  clearGrads(gpu, o);
}

/**
 * The step's stats and its watch, read together: whether the step was taken, and a note naming the
 * non-finite tensors (the gradients of a skipped step; the parameters or moments a taken step left).
 */
/**
 * What a step's finite watch found, in words: with `skipped` (null: it stepped; '' or ' for <roles>': the
 * slots skipped for a non-finite gradient) the gradients named, else any non-finite state it left.
 */
function stepNote(o: Optimizer, found: readonly NonFinite[], what: string, skipped: string | null): string | null {
  const grads = found.filter((x) => o.groups.some((g) => g.grads.label === x.where));
  const rest = found.filter((x) => !grads.includes(x));
  if (skipped !== null) return `${what} step skipped${skipped} (non-finite gradient)${grads.length ? ` in ${describeNonFinite(grads)}` : ''}`;
  return rest.length ? `${what} step left non-finite optimiser state in ${describeNonFinite(rest)}` : null;
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
  let nPol = 0;
  let nVal = 0;
  for (let epoch = 0; epoch < ppo.epochs; epoch++) {
    const order = shuffle(actions, o.rng);
    for (const mb of split(order, ppo.minibatches)) {
      try {
        o.interrupt?.();
      } catch (e) {
        releaseFiniteWatch(gpu, watch);
        throw e;
      }
      // ---- critic ----
      if (useCritic) {
        const vl = state.criticLora
          ? await criticLoraBackward(gpu, dec, state, mb, score, targets, o, watch)
          : await criticHeadBackward(gpu, state, mb, score, targets, watch);
        if (vl?.nonFinite.length) {
          st.skipped.push(`epoch ${epoch}: critic step skipped (non-finite values in ${describeNonFinite(vl.nonFinite)})`);
        } else if (vl && vl.finite) {
          recordStep(gpu, state.criticOptim, ppo.criticLr, ppo, watch);
          const [r, bad] = await Promise.all([readOptimizerStats(gpu, state.criticOptim), readFiniteWatch(gpu, watch)]);
          const note = stepNote(state.criticOptim, bad, 'critic', r.skipped ? '' : null);
          if (note) st.skipped.push(`epoch ${epoch}: ${note}`);
          if (!r.skipped) st.criticSteps++;
          st.valueLoss += vl.loss;
          nVal++;
        } else if (vl) {
          st.skipped.push(`epoch ${epoch}: critic step skipped (value loss ${vl.loss})`);
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
      if (r.stepped) { st.policyLoss += r.loss; st.policySteps++; }
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
  skipped: string | null;
}

/**
 * One policy step over a minibatch, in micro-batches whose logits fit the token budget (gradients
 * accumulate across them; each loss is divided by the whole minibatch's count, so their sum is the
 * minibatch's mean). The step is taken only if every micro-batch's loss is finite and the approximate KL
 * stays under the target. With ppo.klIn 'reward' the KL is in the rewards already: the loss gets no KL
 * term (coefficient 0), the reference log-probs still give the KL metric.
 */
async function policyMinibatch(
  gpu: Gpu, dec: Decoder, state: TrainState, pm: ActionRecord[], score: ScoreResult, targets: Map<ActionRecord, ActionTargets>,
  o: UpdateOptions, epoch: number, watch: FiniteWatch,
): Promise<MinibatchResult> {
  const cfg = state.config;
  const ppo = cfg.ppo;
  const actionLevel = actionLevelLoss(cfg);
  const { advOf, Z } = minibatchAdvantages(pm, targets, cfg);
  const withKl = ppo.klCoef > 0;
  const targetKl = targetKlOf(cfg);
  const res: MinibatchResult = { counted: false, loss: 0, entropy: 0, approxKl: 0, kl: 0, clipFraction: 0, stepped: false, skipped: null };
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
    const common = { clip: ppo.clip, entropyCoef: ppo.entropyCoef, klCoef: ppo.klIn === 'loss' ? ppo.klCoef : 0, klEstimator: ppo.klEstimator, normalizer: Z };
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
  } else if (exceedsTargetKl(res.approxKl, targetKl)) {
    res.skipped = `epoch ${epoch}: policy step skipped (approx KL ${res.approxKl.toExponential(2)} > target ${targetKl})`;
  } else {
    const slots = [...new Set(o.trainAgents.map(o.slotOf))].sort((a, b) => a - b);
    recordStep(gpu, state.policyOptim, ppo.lr, ppo, watch, slots);
    const [stats, found] = await Promise.all([readSlotStats(gpu, state.policyOptim), readFiniteWatch(gpu, watch)]);
    const bad = o.trainAgents.filter((a) => stats[o.slotOf(a)].skipped).map((a) => cfg.graph.agents[a].role);
    const note = stepNote(state.policyOptim, found, 'policy', bad.length ? (bad.length < o.trainAgents.length ? ` for ${bad.join(', ')}` : '') : null);
    if (note) res.skipped = `epoch ${epoch}: ${note}`;
    res.stepped = slots.some((s) => !stats[s].skipped);
  }
  clearGrads(gpu, state.policyOptim);
  return res;
}

/**
 * The advantages a policy minibatch trains on, per action (one entry at action level, else one per
 * generated token; GRPO's are constant over an action's tokens), and Z, their count (the loss's normaliser). PPO with ppo.advantageNorm normalises
 * them over the whole minibatch (normalizeAdvantages); GRPO's are used exactly as computeTargets gave them,
 * already normalised within their group, whatever advantageNorm says (a second, minibatch-wide
 * normalisation would give a group with equal rewards a non-zero advantage).
 */
export function minibatchAdvantages(
  pm: readonly ActionRecord[], targets: Map<ActionRecord, ActionTargets>, cfg: RunConfig,
): { advOf: Map<ActionRecord, number[]>; Z: number } {
  const actionLevel = actionLevelLoss(cfg);
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
