// The device notes before a run: software adapters recognised, and the iteration estimate's arithmetic
// worked by hand on a toy model.

import { describe, expect, it } from 'vitest';
import { defaultRunConfig } from '../config/run-presets.ts';
import { estimateIteration, isSoftwareAdapter } from './gpu-estimate.ts';

const adapter = (o: Partial<{ vendor: string; architecture: string; device: string; description: string; isFallback: boolean }>) => ({
  vendor: '',
  architecture: '',
  device: '',
  description: '',
  features: [],
  isFallback: false,
  ...o,
});

describe('device notes', () => {
  it('recognises software adapters by the fallback flag or by name, not a real GPU', () => {
    expect(isSoftwareAdapter(adapter({ vendor: 'google', architecture: 'swiftshader', description: 'SwiftShader driver 5.0.0' }))).toBe(
      true,
    );
    expect(isSoftwareAdapter(adapter({ description: 'llvmpipe (LLVM 15.0.6, 256 bits)' }))).toBe(true);
    expect(isSoftwareAdapter(adapter({ vendor: 'nvidia', isFallback: true }))).toBe(true);
    expect(isSoftwareAdapter(adapter({ vendor: 'nvidia', architecture: 'hopper', description: 'NVIDIA H100' }))).toBe(false);
  });

  it('estimates an iteration from dispatches and FLOPs (worked by hand)', () => {
    // the lab config: duo, 48 new tokens each, 4 episodes, horizon 2, PPO with 1 epoch x 1 minibatch
    const c = defaultRunConfig();
    expect([
      c.graph.agents.length,
      c.graph.agents[0].maxNewTokens,
      c.rollout.episodes,
      c.rollout.horizon,
      c.ppo.epochs,
      c.ppo.minibatches,
    ]).toEqual([2, 48, 4, 2, 1, 1]);
    // L=2, C=4, V=8: P = 12*2*16 + 32 = 416; D = 14*2 + 4 = 32; B = 4; turns = 4; decode steps = 2*96 = 192
    // tokens per episode = 192 + 4*160 = 832; FLOPs of one pass over the batch = 4 * 2 * 416 * 832 = 2 768 896
    // rollout = (192 + 4) * 32 * 1 ms + 2.768896 ms = 6274.768896 ms; update = 5 * 32 ms + 5 * 2.768896 ms = 173.84448 ms
    const e = estimateIteration(c, { numLayers: 2, hiddenSize: 4, vocabSize: 8 }, { dispatchMs: 1, gflops: 1 });
    expect(e.rolloutSeconds).toBeCloseTo(6.274768896, 12);
    expect(e.updateSeconds).toBeCloseTo(0.17384448, 12);
    expect(e.seconds).toBeCloseTo(6.448613376, 12);
    // GRPO multiplies the sequences by the group size: only the FLOP terms grow
    c.algo = 'grpo';
    c.rollout.groupSize = 2;
    const g = estimateIteration(c, { numLayers: 2, hiddenSize: 4, vocabSize: 8 }, { dispatchMs: 1, gflops: 1 });
    expect(g.rolloutSeconds).toBeCloseTo(6.272 + 2 * 0.002768896, 12);
  });
});
