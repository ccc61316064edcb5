// Scoring runs the policy and the reference (slot -1) as one forward over both halves of a stacked batch
// (score.ts). Here its log-probs, entropies, critic inputs and values are checked against the path it
// replaced: a forward of its own for each, with full logits, and the log-softmax in float64 on the CPU.

import { describe, expect, it } from 'vitest';
import { expectClose, testGpu } from '../../kernels/testing.ts';
import type { Gpu } from '../gpu/gpu.ts';
import type { Decoder } from '../model/decoder.ts';
import { valueHeadForward, releaseValueHeadState } from '../model/value-head.ts';
import type { LoraSet } from '../model/lora-set.ts';
import type { ActionRecord } from './rollout.ts';
import { scoreActions } from './score.ts';
import { criticTrunk } from './critic.ts';
import { handAction, twoEpisodes } from './testing-episodes.ts';
import { tinySetup } from './testing.ts';

/** Per action: the log-probs and entropies of its tokens under slot `slot` (-1: the base), and the forward's final hidden rows before them. */
async function separate(
  gpu: Gpu,
  dec: Decoder,
  adapters: LoraSet,
  a: ActionRecord,
  slot: number,
): Promise<{ logp: number[]; entropy: number[]; h: Float32Array }> {
  const ids = Int32Array.from([...a.promptIds, ...a.actionIds]);
  const st = dec.forward({ B: 1, T: ids.length, ids, adapters, slots: Int32Array.of(slot) });
  const [logits, hN] = [await gpu.readF32(st.logits!), await gpu.readF32(st.hN)];
  dec.release(st);
  const V = dec.config.vocabSize;
  const C = dec.config.hiddenSize;
  const P = a.promptIds.length;
  const out = { logp: [] as number[], entropy: [] as number[], h: hN.slice((P - 1) * C, (P - 1 + a.actionIds.length) * C) };
  a.actionIds.forEach((id, k) => {
    const row = Array.from(logits.subarray((P - 1 + k) * V, (P + k) * V));
    const m = Math.max(...row);
    const lse = m + Math.log(row.reduce((s, x) => s + Math.exp(x - m), 0));
    out.logp.push(row[id] - lse);
    out.entropy.push(-row.reduce((s, x) => s + Math.exp(x - lse) * (x - lse), 0));
  });
  return out;
}

describe('scoreActions', () => {
  // loraCritic: the critic runs its own trunk (critic.ts), so the stacked batch's reference half is there for
  // the reference log-probs only (needRef), or absent (the policy half alone)
  for (const [needRef, maxTokens, loraCritic] of [
    [true, 512, false],
    [true, 16, false],
    [false, 512, false],
    [true, 512, true],
    [false, 512, true],
  ] as const) {
    it(`one forward of policy and reference gives each one's log-probs, the trunk's rows and the values (needRef ${needRef}, maxTokens ${maxTokens}${loraCritic ? ', LoRA critic' : ''})`, async () => {
      const gpu = await testGpu();
      const s = tinySetup(gpu, { level: 'token', ...(loraCritic ? { critic: { mode: 'lora', hidden: [8] } } : {}) });
      const adapters = s.state.policy;
      // adapters that move the policy away from the base (a fresh LoRA's B is 0)
      for (const p of adapters.layers.flatMap((l) => Object.values(l))) {
        if (p)
          gpu.write(
            p.B,
            Float32Array.from({ length: p.B.shape.reduce((x, y) => x * y, 1) }, (_, i) => Math.sin(i * 1.7) * 0.3),
          );
      }
      // an action of no tokens (no logits rows) among them
      const actions = [...twoEpisodes(), handAction(2, 0, [5, 9, 6], [])];
      const slotOf = (agent: number) => agent;
      const critic = loraCritic ? criticTrunk(s.state, actions, 256) : undefined;
      const res = await scoreActions(gpu, s.decoder, s.state.critic, actions, {
        level: 'token',
        adapters,
        slotOf,
        headOf: () => 0,
        padId: 0,
        maxTokens,
        needRef,
        critic,
      });
      const input = await gpu.readF32(res.criticInput);
      gpu.release(res.criticInput);
      const C = s.decoder.config.hiddenSize;
      for (const a of actions) {
        const got = res.scores.get(a)!;
        const pol = await separate(gpu, s.decoder, adapters, a, slotOf(a.agent));
        const ref = await separate(gpu, s.decoder, adapters, a, -1);
        expectClose('policy log-probs', got.oldLogp, pol.logp, { atol: 2e-5, rtol: 1e-5 });
        expectClose('entropies', got.entropy, pol.entropy, { atol: 2e-5, rtol: 1e-5 });
        if (needRef) expectClose('reference log-probs', got.refLogp, ref.logp, { atol: 2e-5, rtol: 1e-5 });
        else expect(got.refLogp).toEqual([]);
        if (loraCritic) continue; // its critic inputs and values come from its own trunk (critic.test.ts)
        // the critic reads the frozen trunk (the reference half), not the policy's hidden states
        const rows = input.subarray(got.criticRow * C, (got.criticRow + a.actionIds.length) * C);
        expectClose('critic input', rows, ref.h, { atol: 1e-5, rtol: 1e-5 });
        if (a.actionIds.length) expect(Math.max(...pol.h.map((x, i) => Math.abs(x - ref.h[i])))).toBeGreaterThan(1e-3);
        if (a.actionIds.length) {
          const hRows = gpu.upload(ref.h, [a.actionIds.length, C], 'f32', 'h');
          const hs = valueHeadForward(gpu, s.state.critic, hRows);
          const v = await gpu.readF32(hs.values);
          releaseValueHeadState(gpu, hs);
          gpu.release(hRows);
          expectClose('values', got.values, v.subarray(0, a.actionIds.length), { atol: 1e-5, rtol: 1e-5 });
        }
        // the policy differs from the reference, so the halves were not mixed up
        if (needRef && a.actionIds.length)
          expect(Math.max(...got.oldLogp.map((x, k) => Math.abs(x - got.refLogp[k])))).toBeGreaterThan(1e-4);
      }
      expect(res.nonFinite).toEqual([]);
    });
  }
});
