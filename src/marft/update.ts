// The PPO update on the GPU. Per minibatch: the policy's forward (saved) over the minibatch's actions, the
// model's log-prob/entropy head, the clipped surrogate with its entropy bonus and KL penalty on the GPU
// (heads.ts policyLoss: losses.ts's formulas in f32, losses.ts stays their float64 reference), whose per-token
// gradients go straight into the head's backward into the logits and the decoder's backward into the
// adapters. The critic trains on the frozen trunk's hidden states gathered at scoring time, or, with a
// critic LoRA, on its own trunk's forward and backward each minibatch (critic.ts). AdamW steps run on the
// GPU and skip a non-finite gradient there; their stats (gradient norms, non-finite flags) and a finite watch
// (finite-watch.ts) over the critic's layers, the logits, the gradients and the optimiser state, so a skip
// names the tensor, are only for the metrics: nothing later in the update depends on them.
// Syncs: the update waits only where the CPU needs a value to go on: once per policy minibatch, for the loss's
// sums (accumulated on the GPU over its micro-batches) that decide whether it steps (and a LoRA critic's
// values); everything else rides along in one ReadQueue (readback.ts).
// The frozen-head critic's forward is recorded before the policy's first micro-batch and read with its sums (its
// backward and step follow the read: the two touch disjoint tensors, so the GPU computes the same numbers),
// and each step's stats and watch are snapshotted and read at the next wait, or at the end of the update. A
// minibatch so costs one readback whatever its micro-batches, plus one for the update's last step. Metrics
// and skip notes are put together in the order the steps ran, as if each had been read at once. A minibatch whose approximate KL passes the target
// (targetKlOf) skips its policy step only, as the legacy MARFT trainers (appo_trainer.py / tppo_trainer.py
// return before the policy step, after the critic's): the critic and the later minibatches train on. The
// policy's optimiser keeps a state per adapter slot (each agent clipped by its own gradient norm, with its
// own step count); agent-by-agent schedules step only the training agents' slots, so the frozen agents'
// adapters, Adam moments and counts stay exactly as they were.

import type { Gpu } from '../gpu/gpu.ts';
import type { Decoder } from '../model/decoder.ts';
import {
  type PolicyLossRows,
  namePolicySums,
  policyLoss,
  policyLossSums,
  releaseTokenLogprobs,
  tokenLogprobs,
  tokenLogprobsBackward,
} from '../model/heads.ts';
import { type Optimizer, type OptimizerStats, clearGrads, optimizerStep, snapshotSlotStats } from '../model/optimizer.ts';
import { type Later, ReadQueue } from '../gpu/readback.ts';
import type { Rng } from '../common/rng.ts';
import { valueHeadWatchSlots } from '../model/value-head.ts';
import {
  type FiniteWatch,
  type NonFinite,
  createFiniteWatch,
  describeNonFinite,
  optimizerWatchSlots,
  releaseFiniteWatch,
  snapshotFiniteWatch,
  watchFinite,
  watchGradients,
  watchOptimizerState,
} from '../model/finite-watch.ts';
import { normalizeAdvantages } from './advantages.ts';
import { type ActionBatch, buildBatch, chunkActions } from './batch.ts';
import { type RunConfig, actionLevelLoss, targetKlOf } from '../config/run-config.ts';
import { type LogProbNorm, actionScales, countWords, exceedsTargetKl } from './losses.ts';
import type { ActionRecord } from './rollout.ts';
import type { ScoreResult } from './score.ts';
import type { TrainState } from './state.ts';
import type { IterationMetrics } from '../config/metrics.ts';
import type { ActionTargets } from './advantage-targets.ts';
import { type CriticForward, type CriticLoss, criticHeadForward, criticLoraBackward } from './critic-step.ts';

export interface UpdateStats extends Pick<
  IterationMetrics,
  'policyLoss' | 'valueLoss' | 'entropy' | 'approxKl' | 'klToRef' | 'clipFraction' | 'skipped'
> {
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
  /** Upper bound on the action rows whose logits one forward takes (the logits' memory); default maxTokens. */
  maxLogitRows?: number;
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
  return Array.from({ length: n }, (_, i) => xs.slice(Math.floor((i * xs.length) / n), Math.floor(((i + 1) * xs.length) / n))).filter(
    (c) => c.length,
  );
};

/**
 * Records a clipped AdamW step (a no-op on the GPU for a slot whose gradient is not finite) and zeroes the
 * grads; `w` watches the gradients and the state it leaves. `slots`: the adapter slots that step (default
 * all); the others are left exactly as they were. The step's stats and its watch are queued in `q`.
 */
function recordStep(
  gpu: Gpu,
  o: Optimizer,
  lr: number,
  cfg: RunConfig['ppo'],
  w: FiniteWatch,
  q: ReadQueue,
  slots?: readonly number[],
): { stats: Later<OptimizerStats[]>; found: Later<NonFinite[]> } {
  watchGradients(gpu, w, o);
  optimizerStep(gpu, o, { lr, eps: cfg.adamEps, weightDecay: cfg.weightDecay, maxNorm: cfg.maxGradNorm }, slots);
  watchOptimizerState(gpu, w, o);
  clearGrads(gpu, o);
  return { stats: snapshotSlotStats(o, q), found: snapshotFiniteWatch(gpu, w, q) };
}

/**
 * What a step's finite watch found, in words: with `skipped` (null: it stepped; '' or ' for <roles>': the
 * slots skipped for a non-finite gradient) the gradients named, else any non-finite state it left.
 */
function stepNote(o: Optimizer, found: readonly NonFinite[], what: string, skipped: string | null): string | null {
  const grads = found.filter((x) => o.groups.some((g) => g.grads.label === x.where));
  const rest = found.filter((x) => !grads.includes(x));
  if (skipped !== null)
    return `${what} step skipped${skipped} (non-finite gradient)${grads.length ? ` in ${describeNonFinite(grads)}` : ''}`;
  return rest.length ? `${what} step left non-finite optimiser state in ${describeNonFinite(rest)}` : null;
}

export async function ppoUpdate(
  gpu: Gpu,
  dec: Decoder,
  state: TrainState,
  actions: ActionRecord[],
  score: ScoreResult,
  targets: Map<ActionRecord, ActionTargets>,
  o: UpdateOptions,
): Promise<UpdateStats> {
  const cfg = state.config;
  const ppo = cfg.ppo;
  const st: UpdateStats = {
    policyLoss: 0,
    valueLoss: 0,
    entropy: 0,
    approxKl: 0,
    klToRef: 0,
    clipFraction: 0,
    skipped: [],
    policySteps: 0,
    criticSteps: 0,
  };
  const useCritic = cfg.algo === 'ppo';
  const policyActs = actions.filter((a) => o.trainAgents.includes(a.agent) && a.actionIds.length > 0);
  const watch = createFiniteWatch(
    gpu,
    Math.max(valueHeadWatchSlots(state.critic), optimizerWatchSlots(state.criticOptim), optimizerWatchSlots(state.policyOptim), 1),
  );
  const q = new ReadQueue(gpu);
  /** What the steps' read-back stats add to `st`, in the order the steps ran: run once the queue is read. */
  const pending: Array<() => void> = [];
  /** A skip note now, or one that waits for a step's stats (pushed in place, so st.skipped keeps the order). */
  const note = (x: string | (() => string | null)): void => {
    if (typeof x === 'string') pending.push(() => st.skipped.push(x));
    else
      pending.push(() => {
        const n = x();
        if (n) st.skipped.push(n);
      });
  };
  let nPol = 0;
  let nVal = 0;
  /** The critic's value loss of one minibatch, taken into the stats; a finite one steps the critic. */
  const criticStep = (epoch: number, vl: CriticLoss | null): void => {
    if (vl?.nonFinite.length) {
      note(`epoch ${epoch}: critic step skipped (non-finite values in ${describeNonFinite(vl.nonFinite)})`);
    } else if (vl && vl.finite) {
      const r = recordStep(gpu, state.criticOptim, ppo.criticLr, ppo, watch, q);
      note(() => {
        const n = stepNote(state.criticOptim, r.found.get(), 'critic', r.stats.get()[0].skipped ? '' : null);
        return n && `epoch ${epoch}: ${n}`;
      });
      pending.push(() => {
        if (!r.stats.get()[0].skipped) st.criticSteps++;
      });
      st.valueLoss += vl.loss;
      nVal++;
    } else if (vl) {
      note(`epoch ${epoch}: critic step skipped (value loss ${vl.loss})`);
    }
  };
  try {
    for (let epoch = 0; epoch < ppo.epochs; epoch++) {
      const order = shuffle(actions, o.rng);
      for (const mb of split(order, ppo.minibatches)) {
        o.interrupt?.();
        // ---- critic: the LoRA critic reads its values at once; the frozen-head critic's are read with the policy's log-probs ----
        let critic: CriticForward | null = null;
        if (useCritic) {
          if (state.criticLora) criticStep(epoch, await criticLoraBackward(gpu, dec, state, mb, score, targets, o, watch, q));
          else critic = criticHeadForward(gpu, state, mb, score, targets, q, watch);
        }
        const finishCritic = (): void => {
          if (critic) {
            const c = critic;
            critic = null;
            criticStep(epoch, c.finish());
          }
        };
        // ---- policy ----
        const pm = mb.filter((a) => policyActs.includes(a));
        if (!o.trainPolicy || !pm.length) {
          if (critic) {
            await q.flush();
            finishCritic();
          }
          continue;
        }
        try {
          const r = await policyMinibatch(gpu, dec, state, pm, score, targets, o, epoch, watch, q, finishCritic);
          if (r.counted) {
            st.entropy += r.entropy;
            st.approxKl += r.approxKl;
            st.klToRef += r.kl;
            st.clipFraction += r.clipFraction;
            nPol++;
          }
          if (r.skipped) note(r.skipped);
          const step = r.step;
          if (step) {
            note(() => step().note);
            pending.push(() => {
              if (step().stepped) {
                st.policyLoss += r.loss;
                st.policySteps++;
              }
            });
          }
        } finally {
          critic?.release();
        }
      }
    }
    await q.flush(); // the last steps' stats
  } finally {
    q.release();
    releaseFiniteWatch(gpu, watch);
  }
  for (const f of pending) f();
  const avg = (x: number, n: number) => (n ? x / n : 0);
  return {
    ...st,
    policyLoss: avg(st.policyLoss, st.policySteps),
    valueLoss: avg(st.valueLoss, nVal),
    entropy: avg(st.entropy, nPol),
    approxKl: avg(st.approxKl, nPol),
    klToRef: avg(st.klToRef, nPol),
    clipFraction: avg(st.clipFraction, nPol),
  };
}

interface MinibatchResult {
  counted: boolean;
  loss: number;
  entropy: number;
  approxKl: number;
  kl: number;
  clipFraction: number;
  /** Why the step was not taken (known before any step). */
  skipped: string | null;
  /** A recorded step: once the queue is read, whether any slot stepped and its note (null: no step recorded). */
  step: (() => { stepped: boolean; note: string | null }) | null;
}

/**
 * The policy loss's per-row inputs of one micro-batch (heads.ts PolicyLossRows), uploaded: behaviour and
 * reference log-probs, advantages and the mask on each action row; at action level each action's span of
 * rows, advantage and log-prob scale (ppo.logProbNorm). Known before the forward: nothing waits for it.
 */
function uploadLossRows(
  gpu: Gpu,
  chunk: readonly ActionRecord[],
  batch: ActionBatch,
  score: ScoreResult,
  advOf: Map<ActionRecord, number[]>,
  actionLevel: boolean,
  norm: LogProbNorm,
): PolicyLossRows {
  const M = batch.logitRows.length;
  const rows = new Float32Array(M * 4);
  chunk.forEach((a, i) => {
    const r = batch.rows[i];
    const s = score.scores.get(a)!;
    const ref = s.refLogp.length ? s.refLogp : s.oldLogp;
    const adv = advOf.get(a)!;
    for (let k = 0; k < r.count; k++) {
      const at = 4 * (r.at + k);
      rows[at] = s.oldLogp[k];
      rows[at + 1] = ref[k];
      if (!actionLevel) {
        rows[at + 2] = adv[k];
        rows[at + 3] = 1;
      } // action level: the action's advantage and mask, in acts
    }
  });
  const out: PolicyLossRows = { rows: gpu.upload(rows, [M, 4], 'f32', 'ppo.rows') };
  if (actionLevel) {
    const spans = chunk.map((a, i) => ({ agent: a.agent, start: batch.rows[i].at, end: batch.rows[i].at + batch.rows[i].count }));
    const scale = actionScales(
      spans,
      norm,
      chunk.map((a) => countWords(a.text)),
    );
    out.actions = {
      spans: gpu.upload(
        batch.rows.flatMap((r) => [r.at, r.count]),
        [chunk.length, 2],
        'i32',
        'ppo.spans',
      ),
      acts: gpu.upload(
        chunk.flatMap((a, i) => [advOf.get(a)![0], scale[i], 1, 0]),
        [chunk.length, 4],
        'f32',
        'ppo.acts',
      ),
    };
  }
  return out;
}

/**
 * One policy step over a minibatch, in micro-batches whose logits fit the token budget (gradients
 * accumulate across them; each loss is divided by the whole minibatch's count, so their sum is the
 * minibatch's mean). The loss runs on the GPU (heads.ts policyLoss): every micro-batch's forward, loss and
 * backward are recorded without a wait, the loss's sums accumulating in one small tensor, which is read once,
 * with the logits' finite watch (and whatever else is queued in `q`); `afterRead` runs after that read
 * (the caller's critic step, whose values came with it). The step is taken only if the loss is finite, the
 * logits were, and the approximate KL stays under the target; else the accumulated gradients are dropped.
 * With ppo.klIn 'reward' the KL is in the rewards already: the loss gets no KL term (coefficient 0), the
 * reference log-probs still give the KL metric.
 */
async function policyMinibatch(
  gpu: Gpu,
  dec: Decoder,
  state: TrainState,
  pm: ActionRecord[],
  score: ScoreResult,
  targets: Map<ActionRecord, ActionTargets>,
  o: UpdateOptions,
  epoch: number,
  watch: FiniteWatch,
  q: ReadQueue,
  afterRead: () => void,
): Promise<MinibatchResult> {
  const cfg = state.config;
  const ppo = cfg.ppo;
  const actionLevel = actionLevelLoss(cfg);
  const { advOf, Z } = minibatchAdvantages(pm, targets, cfg);
  const targetKl = targetKlOf(cfg);
  const opts = {
    clip: ppo.clip,
    entropyCoef: ppo.entropyCoef,
    klCoef: ppo.klIn === 'loss' ? ppo.klCoef : 0,
    klEstimator: ppo.klEstimator,
    withRef: ppo.klCoef > 0,
    normalizer: Z,
  };
  const res: MinibatchResult = { counted: false, loss: 0, entropy: 0, approxKl: 0, kl: 0, clipFraction: 0, skipped: null, step: null };
  const sumsT = policyLossSums(gpu, 'ppo');
  let sums: ReturnType<typeof namePolicySums>;
  let badLogits = 0;
  try {
    for (const chunk of chunkActions(pm, o.maxTokens, undefined, o.maxLogitRows)) {
      const batch = buildBatch(chunk, o.slotOf, o.padId); // pm's actions all have tokens: M > 0
      const rows = uploadLossRows(gpu, chunk, batch, score, advOf, actionLevel, ppo.logProbNorm);
      const targetsT = gpu.upload(batch.logitTargets, [batch.logitRows.length], 'i32', 'ppo.targets');
      const fw = dec.forward(
        { B: batch.B, T: batch.T, ids: batch.ids, mask: batch.mask, adapters: state.policy, slots: batch.slots },
        { save: o.recompute ? 'checkpoint' : true, logitRows: batch.logitRows },
      );
      watchFinite(gpu, watch, 'policy logits', fw.logits!);
      const head = tokenLogprobs(gpu, fw.logits!, targetsT, 'ppo');
      const d = policyLoss(gpu, sumsT, head, rows, opts);
      tokenLogprobsBackward(gpu, head, fw.logits!, d.dlogp, d.dentropy);
      dec.backward(fw, fw.logits, null);
      releaseTokenLogprobs(gpu, head);
      gpu.release(targetsT, d.dlogp, d.dentropy, rows.rows, rows.actions?.spans, rows.actions?.acts);
      dec.release(fw);
    }
    const [sumsL, badL] = [q.read(sumsT, namePolicySums), snapshotFiniteWatch(gpu, watch, q)];
    await q.flush();
    afterRead();
    sums = sumsL.get();
    for (const x of badL.get()) badLogits += x.count;
  } finally {
    gpu.release(sumsT);
  }
  // loss, entropy and KL are divided by Z already; approx KL and clip fraction are sums over the Z units
  Object.assign(res, {
    counted: true,
    loss: sums.loss,
    entropy: sums.entropy,
    kl: sums.kl,
    approxKl: sums.approxKl / Z,
    clipFraction: sums.clipped / Z,
  });
  if (badLogits) {
    res.skipped = `epoch ${epoch}: policy step skipped (non-finite values in policy logits (${badLogits} values))`;
  } else if (!Number.isFinite(res.loss)) {
    res.skipped = `epoch ${epoch}: policy step skipped (loss ${res.loss})`;
  } else if (exceedsTargetKl(res.approxKl, targetKl)) {
    res.skipped = `epoch ${epoch}: policy step skipped (approx KL ${res.approxKl.toExponential(2)} > target ${targetKl})`;
  } else {
    const slots = [...new Set(o.trainAgents.map(o.slotOf))].sort((a, b) => a - b);
    const r = recordStep(gpu, state.policyOptim, ppo.lr, ppo, watch, q, slots);
    let out: { stepped: boolean; note: string | null } | null = null;
    res.step = () => {
      if (out) return out;
      const stats = r.stats.get();
      const bad = o.trainAgents.filter((a) => stats[o.slotOf(a)].skipped).map((a) => cfg.graph.agents[a].role);
      const note = stepNote(
        state.policyOptim,
        r.found.get(),
        'policy',
        bad.length ? (bad.length < o.trainAgents.length ? ` for ${bad.join(', ')}` : '') : null,
      );
      out = { stepped: slots.some((s) => !stats[s].skipped), note: note && `epoch ${epoch}: ${note}` };
      return out;
    };
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
  pm: readonly ActionRecord[],
  targets: Map<ActionRecord, ActionTargets>,
  cfg: RunConfig,
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
