// The critic LoRA and the whole-episode critic on the tiny model (SwiftShader in Node), with hand-built
// actions: the value loss's gradient w.r.t. the critic LoRA against central finite differences, critic
// steps that lower the value loss and leave the policy's adapters untouched, what the critic reads (the
// prompt's last token; the whole episode so far with critic.input 'episode'), the fresh critic LoRA's
// initialisation, checkpoints of every critic mode and the PEFT export of the critic adapters.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { getLoraSlot, loraParams } from '../model/lora-set.ts';
import { clearGrads, readOptimizerStats } from '../model/optimizer.ts';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE, readPeftAdapter } from '../model/peft.ts';
import { Rng } from '../common/rng.ts';
import { memoryStore } from '../platform/storage/store.ts';
import type { ActionTargets } from './advantage-targets.ts';
import { loadCheckpoint, saveCheckpoint } from './checkpoint/checkpoint.ts';
import { criticLoraBackward } from './critic-step.ts';
import { criticTrunk, criticViews } from './critic.ts';
import { exportAdapters } from './export/peft.ts';
import type { ActionRecord } from './rollout.ts';
import { handAction as act, twoEpisodes as episodes } from './testing-episodes.ts';
import { type ScoreResult, scoreActions } from './score.ts';
import { type TrainState, releaseTrainState } from './state.ts';
import { tinySetup } from './testing.ts';
import { Trainer } from './trainer.ts';
import { ppoUpdate } from './update.ts';

let gpu: Gpu;
const setups: Array<ReturnType<typeof tinySetup>> = [];
const extra: TrainState[] = [];
beforeAll(async () => {
  gpu = await testGpu();
});
afterAll(() => {
  for (const s of setups) releaseTrainState(gpu, s.state);
  for (const s of extra) releaseTrainState(gpu, s);
});

function setup(critic: Record<string, unknown>, over: Record<string, unknown> = {}) {
  const s = tinySetup(gpu, { level: 'action', critic: { hidden: [8], ...critic }, ...over });
  setups.push(s);
  return s;
}

type Setup = ReturnType<typeof tinySetup>;

async function score(s: Setup, actions: ActionRecord[], level: 'action' | 'token' = 'action', trunk = true): Promise<ScoreResult> {
  return scoreActions(gpu, s.decoder, s.state.critic, actions, {
    level,
    adapters: s.state.policy,
    slotOf: (a) => a,
    headOf: (a) => (s.state.config.critic.mode === 'shared' ? 0 : a),
    padId: 0,
    maxTokens: 512,
    needRef: false,
    critic: trunk ? criticTrunk(s.state, actions, 256) : undefined,
  });
}

/** Fixed returns: one per critic row. */
function fixedTargets(actions: ActionRecord[], level: 'action' | 'token'): Map<ActionRecord, ActionTargets> {
  return new Map(
    actions.map((a, i) => {
      const n = level === 'token' ? a.actionIds.length : 1;
      return [
        a,
        { reward: 0, advantages: Array(n).fill(0), returns: Array.from({ length: n }, (_, k) => (i % 2 ? 1 : -0.5) + 0.1 * k), trace: [] },
      ];
    }),
  );
}

async function readAll(ts: Tensor[]): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  for (const t of ts) out.push(Float32Array.from(await gpu.readF32(t)));
  return out;
}

/** Random non-zero critic LoRA B (a fresh B is 0, which would leave every A gradient 0). */
function randomizeCriticB(s: Setup, seed: number): void {
  const rng = new Rng(seed);
  for (const layer of s.state.criticLora!.layers) {
    for (const p of Object.values(layer)) {
      const n = p.B.shape.reduce((a, b) => a * b, 1);
      gpu.write(
        p.B,
        Float32Array.from({ length: n }, () => rng.uniform(-0.5, 0.5)),
      );
    }
  }
}

describe('critic LoRA gradient', () => {
  for (const level of ['action', 'token'] as const) {
    it(`${level} level: matches central finite differences of the value loss w.r.t. the critic LoRA`, async () => {
      const s = setup({ mode: 'lora' }, { level, ppo: { valueClip: 0, valueLoss: 'mse' } });
      randomizeCriticB(s, 4);
      const actions = episodes();
      const sc = await score(s, actions, level);
      const targets = fixedTargets(actions, level);
      const o = { padId: 0, maxTokens: 512 };
      const loss = async (): Promise<number> => {
        const r = await criticLoraBackward(gpu, s.decoder, s.state, actions, sc, targets, o);
        clearGrads(gpu, s.state.criticOptim);
        return r!.loss;
      };
      clearGrads(gpu, s.state.criticOptim);
      const base = await criticLoraBackward(gpu, s.decoder, s.state, actions, sc, targets, o);
      expect(base!.finite).toBe(true);
      const lora = s.state.criticLora!;
      const cases = [
        { name: 'layers.0.q_proj.lora_A', p: lora.layers[0].q_proj!, which: 'A' as const, idx: [3, 40] },
        { name: 'layers.1.v_proj.lora_B', p: lora.layers[1].v_proj!, which: 'B' as const, idx: [1, 5 + 8 * 2] }, // slot 0 and slot 1
        { name: 'layers.1.q_proj.lora_A', p: lora.layers[1].q_proj!, which: 'A' as const, idx: [2 * 16 + 7] }, // slot 1
      ];
      const grads = await readAll(cases.map((c) => (c.which === 'A' ? c.p.dA : c.p.dB)));
      clearGrads(gpu, s.state.criticOptim);
      const eps = 1e-2;
      const failures: string[] = [];
      let nonZero = 0;
      for (const [ci, c] of cases.entries()) {
        const param = c.which === 'A' ? c.p.A : c.p.B;
        const values = Float32Array.from(await gpu.readF32(param));
        for (const i of c.idx) {
          const x = values[i];
          gpu.write(param, Float32Array.of(x + eps), i * 4);
          const up = await loss();
          gpu.write(param, Float32Array.of(x - eps), i * 4);
          const down = await loss();
          gpu.write(param, Float32Array.of(x), i * 4);
          const fd = (up - down) / (2 * eps);
          const g = grads[ci][i];
          if (Math.abs(g) > 1e-4) nonZero++;
          const ok = Math.abs(fd - g) <= 1e-5 + 2e-2 * Math.abs(fd);
          console.log(`${ok ? 'ok ' : 'BAD'} ${c.name}[${i}]: backward ${g.toPrecision(6)}, finite difference ${fd.toPrecision(6)}`);
          if (!ok) failures.push(`${c.name}[${i}]`);
        }
      }
      expect(failures).toEqual([]);
      expect(nonZero).toBeGreaterThanOrEqual(3);
      gpu.release(sc.criticInput);
    });
  }
});

describe('critic LoRA training', () => {
  it('lowers the value loss on a fixed batch, moves the critic LoRA and leaves the policy adapters untouched', async () => {
    const s = setup({ mode: 'lora' }, { ppo: { criticLr: 1e-2, epochs: 1, minibatches: 1 } });
    const actions = episodes();
    const targets = fixedTargets(actions, 'action');
    const policy = loraParams(s.state.policy).map((p) => p.param);
    const criticB = loraParams(s.state.criticLora!)
      .map((p) => p.param)
      .filter((t) => t.label.endsWith('lora_B'));
    const policyBefore = await readAll(policy);
    const bBefore = await readAll(criticB);
    const losses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const sc = await score(s, actions);
      const u = await ppoUpdate(gpu, s.decoder, s.state, actions, sc, targets, {
        trainPolicy: false,
        trainAgents: [],
        slotOf: (a) => a,
        padId: 0,
        rng: s.state.rng,
        maxTokens: 512,
      });
      gpu.release(sc.criticInput);
      expect(u.criticSteps).toBe(1);
      losses.push(u.valueLoss);
    }
    console.log(`value loss over critic-LoRA steps: ${losses.map((l) => l.toFixed(4)).join(' ')}`);
    expect(losses[5]).toBeLessThan(0.8 * losses[0]);
    const policyAfter = await readAll(policy);
    policyAfter.forEach((t, i) =>
      expect(
        t.every((v, k) => Object.is(v, policyBefore[i][k])),
        policy[i].label,
      ).toBe(true),
    );
    const bAfter = await readAll(criticB);
    expect(bAfter.some((t, i) => t.some((v, k) => v !== bBefore[i][k]))).toBe(true);
    expect(bBefore.every((t) => t.every((v) => v === 0))).toBe(true); // PEFT init: B = 0
  });
});

describe('what the critic reads', () => {
  it("'episode' views: the episode so far (earlier prompts and outputs in acting order) before the own prompt, truncated from the left", () => {
    const a = episodes();
    const own = criticViews(a, 'own', 256);
    expect(own.get(a[1])).toBe(a[1]);
    const ep = criticViews(a, 'episode', 256);
    expect(ep.get(a[0])!.promptIds).toEqual(a[0].promptIds);
    expect(ep.get(a[1])!.promptIds).toEqual([5, 9, 12, 7, 20, 21, 5, 9, 3, 20, 21, 8]);
    expect(ep.get(a[1])!.actionIds).toEqual(a[1].actionIds);
    expect(ep.get(a[2])!.promptIds).toEqual(a[2].promptIds); // another episode: nothing carried over
    expect(ep.get(a[3])!.promptIds).toEqual([5, 9, 12, 11, 22, 5, 9, 4, 22, 8]);
    // 6 + 3 own tokens, 2 of room left: the two newest transcript tokens (the planner's output)
    expect(criticViews(a, 'episode', 11).get(a[1])!.promptIds).toEqual([20, 21, 5, 9, 3, 20, 21, 8]);
  });

  it("'episode' input changes the solver's value and not the planner's (the first to act sees only its prompt)", async () => {
    const sOwn = setup({ mode: 'shared', input: 'own' });
    const sEp = setup({ mode: 'shared', input: 'episode' });
    const a = episodes();
    const own = await score(sOwn, a, 'action', false);
    const ep = await score(sEp, a, 'action');
    const v = (r: ScoreResult, x: ActionRecord) => r.scores.get(x)!.values[0];
    expect(v(ep, a[0])).toBeCloseTo(v(own, a[0]), 5);
    expect(v(ep, a[2])).toBeCloseTo(v(own, a[2]), 5);
    expect(Math.abs(v(ep, a[1]) - v(own, a[1]))).toBeGreaterThan(1e-4);
    expect(Math.abs(v(ep, a[3]) - v(own, a[3]))).toBeGreaterThan(1e-4);
    gpu.release(own.criticInput, ep.criticInput);
  });

  it("reads the hidden state at the prompt's last token (marft/critics/action_level_critic.py: hidden_states[:, -1]) at action level", async () => {
    const s = setup({ mode: 'lora' });
    randomizeCriticB(s, 8);
    const a = act(0, 1, [5, 9, 3, 8], [14, 15]);
    const otherOutput = act(0, 1, [5, 9, 3, 8], [30, 2, 2]);
    const otherPrompt = act(0, 1, [5, 9, 3, 9], [14, 15]);
    const r = await score(s, [a, otherOutput, otherPrompt]);
    const v = (x: ActionRecord) => r.scores.get(x)!.values[0];
    expect(v(otherOutput)).toBeCloseTo(v(a), 5);
    expect(Math.abs(v(otherPrompt) - v(a))).toBeGreaterThan(1e-4);
    gpu.release(r.criticInput);
  });

  it("a fresh critic LoRA (areal/engine/multi_adapter_mixin.py: PEFT add_adapter, B = 0) gives the frozen per-agent heads' values", async () => {
    const lora = setup({ mode: 'lora' });
    const heads = setup({ mode: 'per_agent' });
    const a = episodes();
    const rl = await score(lora, a);
    const rh = await score(heads, a, 'action', false);
    for (const x of a) expect(rl.scores.get(x)!.values[0]).toBeCloseTo(rh.scores.get(x)!.values[0], 5);
    expect(lora.state.critic.heads.length).toBe(2); // a head per adapter (modules_to_save=["score"])
    gpu.release(rl.criticInput, rh.criticInput);
  });
});

describe('critic checkpoints and export', () => {
  for (const [mode, input] of [
    ['shared', 'own'],
    ['per_agent', 'episode'],
    ['lora', 'own'],
    ['lora', 'episode'],
  ] as const) {
    it(`critic ${mode}, input ${input}: a checkpoint round trip is exact, optimiser state included`, async () => {
      const s = setup({ mode, input });
      if (s.state.criticLora) randomizeCriticB(s, 2);
      // one real critic step, so the Adam moments and stats are not zero
      const actions = episodes();
      const sc = await score(s, actions, 'action', mode === 'lora' || input === 'episode');
      await ppoUpdate(gpu, s.decoder, s.state, actions, sc, fixedTargets(actions, 'action'), {
        trainPolicy: false,
        trainAgents: [],
        slotOf: (x) => x,
        padId: 0,
        rng: s.state.rng,
        maxTokens: 512,
      });
      gpu.release(sc.criticInput);
      const store = memoryStore();
      await saveCheckpoint(gpu, s.state, store, 'run', { baseModel: 'tiny' });
      const loaded = await loadCheckpoint(gpu, store, 'run', s.model);
      extra.push(loaded);
      expect(loaded.config.critic).toEqual(s.state.config.critic);
      const tensors = (st: TrainState) => [
        ...loraParams(st.policy).map((p) => p.param),
        ...st.criticOptim.groups.flatMap((g) => [g.params, g.m, g.v]),
        st.criticOptim.stats,
      ];
      const want = await readAll(tensors(s.state));
      const got = await readAll(tensors(loaded));
      expect(got.length).toBe(want.length);
      expect(want.length).toBe(loraParams(s.state.policy).length + 3 * s.state.criticOptim.groups.length + 1);
      got.forEach((t, i) =>
        expect(
          t.every((v, k) => Object.is(v, want[i][k])),
          `tensor ${i}`,
        ).toBe(true),
      );
      expect((await readOptimizerStats(gpu, loaded.criticOptim)).steps).toBe(1); // the step count came back
      expect(loaded.criticLora === null).toBe(mode !== 'lora');
    });
  }

  it('exports the critic LoRA as PEFT folders that the PEFT reader loads back, beside the value heads', async () => {
    const s = setup({ mode: 'lora' });
    randomizeCriticB(s, 6);
    const files = await exportAdapters(gpu, s.state, { baseModel: 'tiny' });
    expect(
      Object.keys(files)
        .filter((f) => f.startsWith('critic/'))
        .sort(),
    ).toEqual([
      'critic/planner/adapter_config.json',
      'critic/planner/adapter_model.safetensors',
      'critic/solver/adapter_config.json',
      'critic/solver/adapter_model.safetensors',
      'critic/value_head.safetensors',
    ]);
    expect(files['README.md']).toContain('critic LoRA');
    for (const [slot, role] of ['planner', 'solver'].entries()) {
      const enc = (x: Uint8Array | string) => (typeof x === 'string' ? new TextEncoder().encode(x) : x);
      const back = readPeftAdapter(
        {
          [ADAPTER_CONFIG_FILE]: enc(files[`critic/${role}/${ADAPTER_CONFIG_FILE}`]),
          [ADAPTER_WEIGHTS_FILE]: enc(files[`critic/${role}/${ADAPTER_WEIGHTS_FILE}`]),
        },
        s.model,
      );
      const want = await getLoraSlot(gpu, s.state.criticLora!, slot, 'tiny');
      expect(back.config.r).toBe(want.config.r);
      want.layers.forEach((layer, l) => {
        for (const [m, w] of Object.entries(layer)) {
          expect(Array.from(back.layers[l][m as keyof typeof layer]!.A)).toEqual(Array.from(w.A));
          expect(Array.from(back.layers[l][m as keyof typeof layer]!.B)).toEqual(Array.from(w.B));
        }
      });
    }
    const shared = setup({ mode: 'shared' });
    const plain = await exportAdapters(gpu, shared.state, { baseModel: 'tiny' });
    expect(Object.keys(plain).filter((f) => f.startsWith('critic/'))).toEqual(['critic/value_head.safetensors']);
  });
});

describe('a run with a critic LoRA reading the whole episode', () => {
  it('trains its critic LoRA through the trainer and resumes exactly from a checkpoint', async () => {
    const s = setup({ mode: 'lora', input: 'episode' }, { rollout: { episodes: 1, horizon: 1 } });
    const stable = (m: object) => JSON.stringify({ ...m, tokensPerSecond: 0, seconds: 0 });
    const m0 = (await s.trainer.iteration()).metrics;
    expect(Number.isFinite(m0.valueLoss) && m0.valueLoss > 0).toBe(true);
    expect(m0.skipped).toEqual([]);
    const B = s.state.criticLora!.layers[1].v_proj!.B;
    expect((await gpu.readF32(B)).some((v) => v !== 0)).toBe(true); // the critic step reached the critic LoRA
    const store = memoryStore();
    await saveCheckpoint(gpu, s.state, store, 'run', { baseModel: 'tiny' });
    const m1 = (await s.trainer.iteration()).metrics;
    const loaded = await loadCheckpoint(gpu, store, 'run', s.model);
    extra.push(loaded);
    const r1 = (
      await new Trainer({ gpu, envs: s.envs, decoder: s.decoder, tokenizer: s.tokenizer, state: loaded, maxTokens: 512 }).iteration()
    ).metrics;
    expect(stable(r1)).toBe(stable(m1));
    expect(Array.from(await gpu.readF32(loaded.criticLora!.layers[1].v_proj!.B))).toEqual(Array.from(await gpu.readF32(B)));
  });
});
