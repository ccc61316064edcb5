// The training side's waits, counted (Gpu.readCount), so they do not creep back: every readback drains the
// GPU (the CPU waits for it, then it waits while the CPU records the next work). Scoring reads once per
// call whatever its chunks; the update waits once per policy minibatch whatever its micro-batches (for the
// loss's sums, accumulated on the GPU, that decide the step), the frozen-head critic's values and every
// step's stats riding along, and once at its end for the last step's stats; a LoRA critic adds one per
// critic micro-batch.

import { describe, expect, it } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import type { ActionTargets } from './advantage-targets.ts';
import { criticTrunk } from './critic.ts';
import type { ActionRecord } from './rollout.ts';
import { twoEpisodes as episodes } from './testing-episodes.ts';
import { scoreActions } from './score.ts';
import { tinySetup } from './testing.ts';
import { ppoUpdate } from './update.ts';

const gpu = await testGpu();

const targetsOf = (actions: ActionRecord[]): Map<ActionRecord, ActionTargets> =>
  new Map(
    actions.map((a, i) => [
      a,
      {
        reward: 0,
        advantages: a.actionIds.map(() => (i % 2 ? 1 : -1)),
        returns: a.actionIds.map(() => 0.5),
        trace: [],
      },
    ]),
  );

/**
 * Scores and updates 2 epochs x 2 minibatches of 2 actions: the readbacks of the scoring call, and of each
 * minibatch (between the update's interrupt calls, which come before each minibatch; the last one's count
 * runs to the end of the update).
 */
async function run(
  over: Record<string, unknown>,
  maxTokens: number,
  trainPolicy = true,
): Promise<{ score: number; minibatches: number[] }> {
  const s = tinySetup(gpu, { level: 'token', ...over, ppo: { lr: 1e-2, criticLr: 1e-2, targetKl: null, epochs: 2, minibatches: 2 } });
  const actions = episodes();
  const trunk = s.state.config.critic.mode === 'lora' ? criticTrunk(s.state, actions, 256) : undefined;
  const r0 = gpu.readCount;
  const sc = await scoreActions(gpu, s.decoder, s.state.critic, actions, {
    level: 'token',
    adapters: s.state.policy,
    slotOf: (a) => a,
    headOf: () => 0,
    padId: 0,
    maxTokens,
    needRef: true,
    critic: trunk,
  });
  const score = gpu.readCount - r0;
  const marks: number[] = [];
  await ppoUpdate(gpu, s.decoder, s.state, actions, sc, targetsOf(actions), {
    trainPolicy,
    trainAgents: trainPolicy ? [0, 1] : [],
    slotOf: (a) => a,
    padId: 0,
    rng: s.state.rng,
    maxTokens,
    interrupt: () => {
      marks.push(gpu.readCount);
    },
  });
  marks.push(gpu.readCount);
  gpu.release(sc.criticInput);
  return { score, minibatches: marks.slice(1).map((m, i) => m - marks[i]) };
}

describe('readbacks of the training side', () => {
  it('one per scoring call and one per minibatch (policy and frozen-head critic together), one more at the end', async () => {
    expect(await run({}, 512)).toEqual({ score: 1, minibatches: [1, 1, 1, 2] });
  });

  it('still one per policy minibatch when it is split into micro-batches; scoring still reads once', async () => {
    // maxTokens 1: every action is a micro-batch of its own (4 scoring chunks; 2 per minibatch)
    expect(await run({}, 1)).toEqual({ score: 1, minibatches: [1, 1, 1, 2] });
  });

  it('critic warm-up (no policy step): one per minibatch', async () => {
    expect(await run({}, 512, false)).toEqual({ score: 1, minibatches: [1, 1, 1, 2] });
  });

  it("a LoRA critic: its own trunk pass is read with the scoring's; its micro-batches wait for their values", async () => {
    // 2 critic micro-batches and the policy's one per minibatch
    expect(await run({ critic: { mode: 'lora', input: 'own', hidden: [8] } }, 1)).toEqual({ score: 1, minibatches: [3, 3, 3, 4] });
  });
});
