// Non-finite values injected at each phase of an iteration on the Node GPU (SwiftShader here, where
// max(NaN, 0) gives 0, so a NaN in the critic's hidden layer used to vanish in its ReLU): each is detected
// where it appears, named with its place and phase in metrics.skipped, and no weight moves on bad data.
// Then the run loop's policy: a bad iteration is not checkpointed and runLoop.rollbackAfter of them roll
// back to the last checkpoint. Shapes are tiny; each case is one iteration of the tiny 2-agent run.

import { afterAll, describe, expect, it } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import { type ReliabilityRow, recordReliability } from '../../scripts/reliability.ts';
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { memoryStore } from '../platform/storage/index.ts';
import type { ActionTargets } from './advantage-targets.ts';
import { nonFiniteInputs } from './nonfinite.ts';
import type { ActionRecord } from './rollout.ts';
import { type RunLoopEvent, runLoop } from './run-loop.ts';
import { type TrainState, releaseTrainState } from './state.ts';
import { type Phase, Trainer } from './trainer.ts';
import { tinySetup } from './testing.ts';

const TEST = 'src/marft/nonfinite.test.ts';
const rows: ReliabilityRow[] = [];
afterAll(() => recordReliability('nonfinite', rows));
const OVER = { rollout: { episodes: 1, horizon: 1 } };

/** Writes NaN over the first `rows` rows of t (all of it when rows is omitted). */
function poison(gpu: Gpu, t: Tensor, rows?: number): void {
  const n = rows === undefined ? t.shape.reduce((a, b) => a * b, 1) : rows * t.shape.slice(1).reduce((a, b) => a * b, 1);
  gpu.write(t, new Float32Array(n).fill(Number.NaN));
}

interface Case {
  phase: Phase;
  fault: string;
  inject: (gpu: Gpu, s: TrainState) => void;
  /** What metrics.skipped must say. */
  expect: RegExp;
  /** The update ran no step at all (the fault was seen before it). */
  noStep: boolean;
}

const hiddenW = (s: TrainState) => s.critic.heads[0][0].W;
const group = (s: TrainState, label: string) => s.policyOptim.groups.find((g) => g.params.label === label)!;
const loraB = (s: TrainState) => group(s, 'layers.0.v_proj.lora_B');
/** A weight no case poisons and any critic step moves: the critic's output layer. */
const probe = (s: TrainState) => s.critic.heads[0][1].W;
const CASES: Case[] = [
  {
    phase: 'score',
    fault: "NaN in one row of the critic's hidden layer weights (ReLU's max(NaN, 0) gives 0 on SwiftShader)",
    inject: (gpu, s) => poison(gpu, hiddenW(s), 1),
    expect: /^score: non-finite values in critic head 0 hidden layer 0 \(pre-ReLU\) value\.0\.0 \(\d+ values?\)/,
    noStep: true,
  },
  {
    phase: 'score',
    fault: "NaN in the v_proj LoRA B matrix of the policy's layer 0 (every policy logit NaN)",
    inject: (gpu, s) => poison(gpu, loraB(s).params),
    expect: /^score: non-finite values in policy logits \(\d+ values\).*; update skipped$/,
    noStep: true,
  },
  {
    // the attention hides a NaN query on SwiftShader (its logits stay finite): the backward shows it
    phase: 'score',
    fault: "NaN in the q_proj LoRA B matrix of the policy's layer 0 (finite logits, NaN gradients)",
    inject: (gpu, s) => poison(gpu, group(s, 'layers.0.q_proj.lora_B').params),
    expect: /(policy logits|policy step skipped \(non-finite gradient\) in layers\.0\.q_proj\.lora_A\.grad \(\d+ values\))/,
    noStep: false,
  },
  {
    phase: 'score',
    fault: "NaN in the critic's output bias (every value NaN, so every advantage)",
    inject: (gpu, s) => poison(gpu, s.critic.heads[0][1].b),
    expect: new RegExp(
      [
        '^score: non-finite values in critic head 0 output value\\.0\\.1 \\(2 values\\); update skipped',
        'advantages: non-finite advantages for 2 of 2 actions \\(planner, solver\\); update skipped',
        'advantages: non-finite returns for 2 of 2 actions \\(planner, solver\\); update skipped$',
      ].join('\n'),
    ),
    noStep: true,
  },
  {
    phase: 'update',
    fault: "NaN in the critic's hidden layer after scoring (seen by the update's critic forward)",
    inject: (gpu, s) => poison(gpu, hiddenW(s), 1),
    expect: /critic step skipped \(non-finite values in critic head 0 hidden layer 0 \(pre-ReLU\) value\.0\.0/,
    noStep: false,
  },
  {
    phase: 'update',
    fault: "NaN in the policy after scoring (seen in the update's logits)",
    inject: (gpu, s) => poison(gpu, loraB(s).params),
    expect: /policy step skipped \(non-finite values in policy logits \(\d+ values\)\)/,
    noStep: false,
  },
  {
    phase: 'update',
    fault: 'NaN in a policy gradient before the backward accumulates into it',
    inject: (gpu, s) => poison(gpu, loraB(s).grads),
    expect: /policy step skipped \(non-finite gradient\) in .*lora_B\.grad \(\d+ values\)/,
    noStep: false,
  },
  {
    phase: 'update',
    fault: "NaN in the critic's Adam first moment (optimiser state)",
    inject: (gpu, s) => poison(gpu, s.criticOptim.groups[0].m),
    expect: /critic step left non-finite optimiser state in value\.0\.0\.weight \(\d+ values\), value\.0\.0\.weight\.adam_m/,
    noStep: false,
  },
];

describe('non-finite values at every phase', () => {
  for (const c of CASES) {
    it(`${c.phase}: ${c.fault}`, async () => {
      const gpu = await testGpu();
      const s = tinySetup(gpu, OVER);
      let injected = false;
      const before = await gpu.readF32(probe(s.state));
      const t = new Trainer({
        gpu,
        envs: s.envs,
        decoder: s.decoder,
        tokenizer: s.tokenizer,
        state: s.state,
        maxTokens: 512,
        onProgress: (phase) => {
          if (phase === c.phase && !injected) {
            injected = true;
            c.inject(gpu, s.state);
          }
        },
      });
      const res = await t.iteration();
      expect(injected, c.fault).toBe(true);
      const skipped = res.metrics.skipped.join('\n');
      expect(skipped, c.fault).toMatch(c.expect);
      if (c.noStep) {
        for (const x of res.metrics.skipped) expect(x).toMatch(/non-finite .*; update skipped$/);
        expect([res.metrics.policyLoss, res.metrics.valueLoss], c.fault).toEqual([0, 0]);
        expect(Array.from(await gpu.readF32(probe(s.state))), c.fault).toEqual(Array.from(before));
      }
      releaseTrainState(gpu, s.state);
      rows.push({
        area: 'non-finite values',
        fault: `${c.fault}, injected at the start of the ${c.phase} phase`,
        cases: 1,
        outcome: `reported in metrics.skipped: "${res.metrics.skipped[0].replace(/\(\d+ values?\)/g, '(n values)')}"`,
        verdict: 'pass',
        test: TEST,
      });
    });
  }

  it('NaN credited rewards, advantages or returns skip the update, naming the agents', () => {
    const act = (agent: number) => ({ agent }) as ActionRecord;
    const t = (reward: number, adv: number[], ret: number[]): ActionTargets => ({ reward, advantages: adv, returns: ret, trace: [] });
    const roles = ['planner', 'solver'];
    expect(
      nonFiniteInputs(
        { nonFinite: [] },
        new Map([
          [act(0), t(1, [0.5], [1])],
          [act(1), t(0, [-0.5], [0])],
        ]),
        roles,
      ),
    ).toEqual([]);
    expect(
      nonFiniteInputs(
        { nonFinite: [] },
        new Map([
          [act(0), t(Number.NaN, [Number.NaN], [1])],
          [act(1), t(0, [0.1, Infinity], [0])],
        ]),
        roles,
      ),
    ).toEqual([
      'advantages: non-finite credited rewards for 1 of 2 actions (planner); update skipped',
      'advantages: non-finite advantages for 2 of 2 actions (planner, solver); update skipped',
    ]);
    expect(
      nonFiniteInputs({ nonFinite: [{ where: 'policy logits', count: 3 }] }, new Map([[act(1), t(0, [0], [-Infinity])]]), roles),
    ).toEqual([
      'score: non-finite values in policy logits (3 values); update skipped',
      'advantages: non-finite returns for 1 of 1 actions (solver); update skipped',
    ]);
    rows.push({
      area: 'non-finite values',
      fault: 'NaN / ±Inf credited rewards, advantages or returns (advantages phase)',
      cases: 3,
      outcome: 'update skipped, each field and the agents named in metrics.skipped; all-finite targets pass',
      verdict: 'pass',
      test: TEST,
    });
  });

  it("a NaN in the critic's hidden layer is not checkpointed, and runLoop.rollbackAfter such iterations roll back", async () => {
    const gpu = await testGpu();
    const s = tinySetup(gpu, { ...OVER, runLoop: { rollbackAfter: 1 } });
    const events: RunLoopEvent[] = [];
    const seen: Array<{ iteration: number; kept: boolean }> = [];
    let injected = false;
    const r = await runLoop({ gpu, envs: s.envs, decoder: s.decoder, tokenizer: s.tokenizer, model: s.model }, s.state, {
      store: memoryStore(),
      dir: 'run',
      baseModel: 'tiny',
      until: 2,
      maxTokens: 512,
      onEvent: (e) => events.push(e),
      onIteration: (res, kept) => seen.push({ iteration: res.metrics.iteration, kept }),
      onProgress: (phase, _d, { state }) => {
        if (phase === 'score' && state.iteration === 1 && !injected) {
          injected = true;
          poison(gpu, hiddenW(state), 1);
        }
      },
    });
    expect(seen).toEqual([
      { iteration: 0, kept: true },
      { iteration: 1, kept: false },
      { iteration: 1, kept: true },
    ]);
    expect(events.filter((e) => e.kind === 'skipped' || e.kind === 'rollback').map((e) => e.kind)).toEqual(['skipped', 'rollback']);
    expect(events.find((e) => e.kind === 'rollback')).toEqual({ kind: 'rollback', from: 2, to: 1 });
    expect(r.state.metrics.map((m) => m.iteration)).toEqual([0, 1]);
    expect((await gpu.readF32(hiddenW(r.state))).every(Number.isFinite)).toBe(true);
    releaseTrainState(gpu, r.state);
    rows.push({
      area: 'run loop',
      fault: "NaN in the critic's hidden layer at iteration 1 (runLoop.rollbackAfter 1)",
      cases: 1,
      outcome:
        'iteration skipped and reported, not kept, rolled back to the snapshot of iteration 1 (in memory); weights finite again, iteration 1 re-run clean, history [0, 1]',
      verdict: 'pass',
      test: TEST,
    });
  });
});
