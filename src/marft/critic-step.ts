// The critic's step in the update, after scoring (score.ts) and the targets (advantage-targets.ts).
// The LoRA critic's step: forward (saved) over the views with the critic's adapters (critic.ts's trunk
// pass), the value head on the gathered rows, the clipped value loss, its gradient back through the head,
// scattered into the (N, C) final hidden state, and the decoder's backward into the critic LoRA. The
// policy's adapters are not in that forward, so a critic step cannot move them. The frozen-trunk critics'
// step (criticHeadForward, then finish() once its values are read) trains the heads alone, on the hidden
// states gathered at scoring.

import type { Gpu } from '../gpu/gpu.ts';
import type { Decoder } from '../model/decoder.ts';
import { selectRows, selectRowsBackward } from '../model/heads.ts';
import { clearGrads } from '../model/optimizer.ts';
import { releaseValueHeadState, valueHeadBackward, valueHeadForward } from '../model/value-head.ts';
import { type FiniteWatch, type NonFinite, snapshotFiniteWatch } from '../model/finite-watch.ts';
import { type Later, ReadQueue } from '../gpu/readback.ts';
import { chunkActions } from './batch.ts';
import { criticPass } from './critic.ts';
import { valueLoss } from './losses.ts';
import type { ActionRecord } from './rollout.ts';
import type { ActionTargets } from './advantage-targets.ts';
import type { ScoreResult } from './score.ts';
import type { TrainState } from './state.ts';

/** A minibatch's value loss; `nonFinite` names the critic layers where a finite watch saw NaN / ±Inf (no step then). */
export interface CriticLoss {
  loss: number;
  finite: boolean;
  nonFinite: NonFinite[];
}

/**
 * The LoRA critic's value loss over minibatch `mb`, its gradients accumulated into the value heads and the
 * critic LoRA (micro-batches under maxTokens; each chunk's loss is divided by the whole minibatch's row
 * count, so their sum is the minibatch's mean). Returns null when `mb` has no critic rows; a non-finite
 * loss clears the gradients (the caller skips the step). Each micro-batch waits for its values, flushing `q`
 * (so what the caller queued there is read with them).
 */
export async function criticLoraBackward(
  gpu: Gpu,
  dec: Decoder,
  state: TrainState,
  mb: readonly ActionRecord[],
  score: ScoreResult,
  targets: Map<ActionRecord, ActionTargets>,
  o: { padId: number; maxTokens: number; recompute?: boolean },
  watch?: FiniteWatch,
  q = new ReadQueue(gpu),
): Promise<CriticLoss | null> {
  const ppo = state.config.ppo;
  const trunk = score.trunk!;
  const level = score.level;
  const Z = mb.reduce((s, a) => s + targets.get(a)!.returns.length, 0);
  if (!Z) return null;
  const S = state.critic.heads.length;
  const C = state.critic.C;
  const res: CriticLoss = { loss: 0, finite: true, nonFinite: [] };
  for (const chunk of chunkActions(
    mb.filter((a) => targets.get(a)!.returns.length > 0),
    o.maxTokens,
  )) {
    const p = criticPass(gpu, dec, trunk, chunk, level, o.padId, o.recompute ? 'checkpoint' : true);
    const R = p.rowIds.length;
    const hs = valueHeadForward(gpu, state.critic, p.hRows, watch);
    const allL = q.read(hs.values);
    const badL = watch ? snapshotFiniteWatch(gpu, watch, q) : null;
    await q.flush(); // with whatever else the caller queued (an earlier step's stats)
    const [all, bad] = [allL.get(), badL?.get() ?? []];
    res.nonFinite.push(...bad);
    const heads: number[] = [];
    const returns: number[] = [];
    const oldValues: number[] = [];
    for (const a of chunk) {
      const s = score.scores.get(a)!;
      targets.get(a)!.returns.forEach((r, k) => {
        heads.push(score.criticHead[s.criticRow + k]);
        returns.push(r);
        oldValues.push(s.values[k]);
      });
    }
    const values = heads.map((h, i) => all[h * R + i]);
    const vl = valueLoss({
      values,
      oldValues,
      returns,
      clip: ppo.valueClip,
      kind: ppo.valueLoss,
      huberDelta: ppo.huberDelta,
      normalizer: Z,
    });
    res.loss += vl.loss;
    if (!Number.isFinite(vl.loss) || bad.length) res.finite = false;
    if (res.finite) {
      const dv = new Float32Array(S * R);
      heads.forEach((h, i) => {
        dv[h * R + i] = vl.dValues[i];
      });
      const dvT = gpu.upload(dv, [S, R], 'f32', 'critic.dv');
      const ones = gpu.upload(new Float32Array(R).fill(1), [1, R], 'f32', 'critic.ones');
      const dhRows = gpu.tensor([R, C], 'f32', 'critic.dhrows');
      valueHeadBackward(gpu, state.critic, hs, dvT, dhRows, ones);
      const dhN = gpu.zeros([p.fw.N, C], 'f32', 'critic.dhN');
      selectRowsBackward(gpu, dhN, dhRows, p.rowIds);
      dec.backward(p.fw, null, dhN);
      gpu.release(dvT, ones, dhRows, dhN);
    }
    releaseValueHeadState(gpu, hs);
    gpu.release(p.hRows);
    dec.release(p.fw);
  }
  if (!res.finite) clearGrads(gpu, state.criticOptim);
  return res;
}

/** A recorded critic-head forward whose values wait in a ReadQueue: finish() after the queue's flush. */
export interface CriticForward {
  /** The value loss and, when finite, its gradients accumulated into the value heads (recorded); releases the forward. */
  finish(): CriticLoss;
  /** Releases the forward without a loss (an abandoned step). */
  release(): void;
}

/**
 * The frozen-trunk critic's forward over minibatch `mb` (heads on the hidden states gathered at scoring),
 * recorded with its values and watch queued in `q` (no wait): the caller flushes `q` at a sync point of its
 * own, then calls finish(). null when `mb` has no critic rows.
 */
export function criticHeadForward(
  gpu: Gpu,
  state: TrainState,
  mb: readonly ActionRecord[],
  score: ScoreResult,
  targets: Map<ActionRecord, ActionTargets>,
  q: ReadQueue,
  watch?: FiniteWatch,
): CriticForward | null {
  const ppo = state.config.ppo;
  const rows: number[] = [];
  const returns: number[] = [];
  const oldValues: number[] = [];
  for (const a of mb) {
    const s = score.scores.get(a)!;
    const t = targets.get(a)!;
    t.returns.forEach((r, k) => {
      rows.push(s.criticRow + k);
      returns.push(r);
      oldValues.push(s.values[k]);
    });
  }
  if (!rows.length) return null;
  const R = rows.length;
  const x = selectRows(gpu, score.criticInput, rows, 'critic.x');
  const hs = valueHeadForward(gpu, state.critic, x, watch);
  const allL = q.read(hs.values);
  const badL: Later<NonFinite[]> = watch ? snapshotFiniteWatch(gpu, watch, q) : { get: () => [] };
  const release = () => {
    releaseValueHeadState(gpu, hs);
    gpu.release(x);
  };
  return {
    release,
    finish: () => {
      const [all, bad] = [allL.get(), badL.get()];
      const heads = rows.map((r) => score.criticHead[r]);
      const values = rows.map((_, i) => all[heads[i] * R + i]);
      const vl = valueLoss({ values, oldValues, returns, clip: ppo.valueClip, kind: ppo.valueLoss, huberDelta: ppo.huberDelta });
      const finite = Number.isFinite(vl.loss) && !bad.length;
      if (finite) {
        const dv = new Float32Array(state.critic.heads.length * R);
        heads.forEach((h, i) => {
          dv[h * R + i] = vl.dValues[i];
        });
        const dvT = gpu.upload(dv, [state.critic.heads.length, R], 'f32', 'critic.dv');
        const ones = gpu.upload(new Float32Array(R).fill(1), [1, R], 'f32', 'critic.ones');
        valueHeadBackward(gpu, state.critic, hs, dvT, null, ones);
        gpu.release(dvT, ones);
      }
      release();
      return { loss: vl.loss, finite, nonFinite: bad };
    },
  };
}
