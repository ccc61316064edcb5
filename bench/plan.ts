// `npm run bench:plan`: the run plan (src/marft/plan.ts) against the GPU memory one iteration really takes,
// on bench:iteration's run (2 agents planner -> solver, 8 episodes, 128 new tokens each, token-level PPO;
// bench/bench-configs.ts) for the built-in model and random models of SmolLM2-135M's and Qwen2.5-0.5B's
// shapes (GQA, Qwen2's q/k/v biases, tied heads). Random models use the synthetic tokenizer (no end token),
// so every action runs to its maxNewTokens, as the plan assumes; the built-in model's actions may end early.
// Per model it prints the plan and, for the last of --iterations iterations (default 2: the first also
// compiles the pipelines), the buffer pool's measured peaks beside the planned ones (marft train --plan
// --measure prints the same for a run config), then a table of all models.
// Options: --models builtin,smollm2-135m,qwen2.5-0.5b --episodes 8 --new 128 --agents 2 --dtype bf16|f32
//   --max-tokens N (the trainer's bound: 4096 as the lab and the CLI; bench:iteration's random models take 8192)
//   --iterations N --out FILE (JSON of the rows)
// On a CPU adapter (SwiftShader) the defaults shrink to the built-in model, 2 episodes of 8 new tokens.

import { writeFileSync } from 'node:fs';
import { acquireNodeGpu, ensureVulkanEnv } from '../src/gpu/node.ts';
import { parseModelConfig } from '../src/model/config.ts';
import { Decoder } from '../src/model/decoder.ts';
import { loadDecoder } from '../src/model/load.ts';
import { nodeModelFiles } from '../src/model/node-files.ts';
import type { LoadedTokenizer } from '../src/model/tokenizer.ts';
import { releaseWeights, uploadWeights } from '../src/model/weights.ts';
import { formatBytes, formatPlan, planOnModel } from '../src/marft/plan.ts';
import { formatComparison, measurePlan } from '../src/marft/plan-measure.ts';
import { Envs } from '../src/envs/registry.ts';
import { nodeSandbox } from '../src/platform/sandbox/node.ts';
import { BENCH_MODELS, benchModelConfigJson, randomWeights, syntheticTokenizer } from './random-model.ts';
import { randomModelBenchConfig } from './bench-configs.ts';

await ensureVulkanEnv();
const arg = (n: string, d: string): string => {
  const i = process.argv.indexOf(`--${n}`);
  return i > 0 ? process.argv[i + 1] : d;
};

const configJson = (name: string): Record<string, unknown> => benchModelConfigJson(name);

const gpu = await acquireNodeGpu({ log: console.log });
const envs = new Envs(nodeSandbox);
const soft = gpu.cpu;
const names = arg('models', soft ? 'builtin' : 'builtin,smollm2-135m,qwen2.5-0.5b').split(',');
for (const n of names)
  if (n !== 'builtin' && !BENCH_MODELS[n])
    throw new Error(`--models: no model "${n}"; builtin or one of ${Object.keys(BENCH_MODELS).join(', ')}`);
const episodes = Number(arg('episodes', soft ? '2' : '8'));
const maxNew = Number(arg('new', soft ? '8' : '128'));
const agents = Number(arg('agents', '2')) as 1 | 2 | 3 | 4;
const dtype = arg('dtype', 'bf16');
if (dtype !== 'bf16' && dtype !== 'f32') throw new Error(`--dtype must be bf16 or f32, got ${dtype}`);
const maxTokens = Number(arg('max-tokens', '4096'));
const iterations = Math.max(1, Number(arg('iterations', '2')));
const config = randomModelBenchConfig({ agents, maxNew, episodes });
const rows: Array<Record<string, number | string>> = [];

for (const name of names) {
  gpu.trim();
  let decoder: Decoder;
  let tokenizer: LoadedTokenizer;
  if (name === 'builtin') {
    const l = await loadDecoder(gpu, await nodeModelFiles(arg('builtin', 'public/models/marft-tiny')));
    decoder = l.decoder;
    tokenizer = l.model.tokenizer!;
  } else {
    const mc = parseModelConfig(configJson(name));
    decoder = new Decoder(gpu, mc, uploadWeights(gpu, mc, randomWeights(mc, 1), dtype === 'bf16' ? { storeAs: 'bf16' } : {}));
    tokenizer = syntheticTokenizer(mc.vocabSize);
  }
  const plan = await planOnModel({ gpu, decoder, tokenizer, envs }, config, { maxTokens });
  console.log(`\n== ${name}`);
  for (const l of formatPlan(plan)) console.log(l);
  const m = await measurePlan({ gpu, decoder, tokenizer, envs }, config, { iterations, maxTokens });
  for (const l of formatComparison(plan, m)) console.log(l);
  const it = m.iterations.at(-1)!;
  rows.push({
    model: name,
    dtype: decoder.weights.dtype,
    peakPhase: plan.peakPhase,
    plannedInUseMiB: plan.inUseBytes / 2 ** 20,
    measuredInUseMiB: it.inUse / 2 ** 20,
    inUseOff: plan.inUseBytes / it.inUse - 1,
    plannedPeakMiB: plan.peakBytes / 2 ** 20,
    varyingPeakMiB: plan.varyingPeakBytes / 2 ** 20,
    measuredPeakMiB: it.allocated / 2 ** 20,
    peakOff: plan.peakBytes / it.allocated - 1,
    generated: it.generated,
    plannedGenerated: episodes * config.graph.agents.reduce((s, a) => s + a.maxNewTokens, 0),
    seconds: it.seconds,
  });
  releaseWeights(gpu, decoder.weights);
}
gpu.trim();
const cols = [
  'model',
  'dtype',
  'peakPhase',
  'plannedInUseMiB',
  'measuredInUseMiB',
  'inUseOff',
  'plannedPeakMiB',
  'varyingPeakMiB',
  'measuredPeakMiB',
  'peakOff',
  'generated',
  'plannedGenerated',
  'seconds',
];
const fmt = (v: unknown, c: string) =>
  typeof v !== 'number' ? String(v) : c.endsWith('Off') ? `${(v * 100).toFixed(1)}%` : v >= 100 ? v.toFixed(0) : v.toPrecision(3);
console.log(
  `\nplan against measured on ${gpu.adapter.description || gpu.adapter.vendor} (${episodes} episodes, ${agents} agents, ${maxNew} new tokens, maxTokens ${maxTokens}; last of ${iterations} iterations; ${formatBytes(gpu.limits.maxStorageBufferBindingSize)} binding)`,
);
console.log(`| ${cols.join(' | ')} |\n|${cols.map(() => '---').join('|')}|`);
for (const r of rows) console.log(`| ${cols.map((c) => fmt(r[c], c)).join(' | ')} |`);
if (process.argv.includes('--out')) writeFileSync(arg('out', ''), JSON.stringify({ adapter: gpu.adapter, rows }, null, 1));
process.exit(0);
