// `npm run bench:iteration`: one whole MARFT iteration — 2 agents (planner -> solver), 8 episodes, up to
// 128 new tokens per agent, token-level PPO, 1 epoch — on a SmolLM2-135M-shaped random model and on the
// built-in tiny model, timed by phase (rollout, scoring = reference/critic forward, advantages, update),
// with generated tokens/s and peak GPU memory of the buffer pool. Random models use a synthetic tokenizer
// (ids shown as printable characters, no end token), so every action is exactly max-new-tokens long,
// as the PyTorch peer (bench/baselines/iteration.py, `min_new_tokens`) generates.
// Peak memory is the buffer pool's peak (every GPU buffer the lab makes: weights, adapters, critic, optimizer
// state, activations, KV caches) during the timed iterations.
// cpuS: the process's CPU seconds in the timed iteration (all threads: on SwiftShader the GPU's work too),
// steadier than wall time on a shared machine.
// Dispatch counts (Gpu counters, split at the trainer's phase changes): per iteration with its readbacks and
// submits; the rollout's per decode step (its dispatches, prefill included, over generated tokens / episodes:
// exact for the random models, whose actions all run to max-new-tokens; each agent's turn is one batch of
// every episode); the update's per trained token (every generated token is trained once at 1 epoch).
// --preset NAME (e.g. classroom) runs a preset run's own config on the built-in model instead, as the lab
// does (the trainer's default micro-batch), with --episodes episodes (default: the preset's; 1 on a CPU
// adapter) and critic warm-up 0 so the timed iteration has a policy update, as bench:browser sets it.
// The PyTorch peer's prompts should be as long as these (the row's promptTokens, e.g. 275,394 for the 135M
// bench: the arithmetic task's text, one token a character): bench/baselines/iteration.py --prompts 275,394.
// Options: --preset NAME --models smollm2-135m,builtin --episodes 8 --new 128 --agents 2 --dtype bf16|f32 --recompute auto|on|off --max-tokens N --tokenizer synthetic|lab
//   --fused auto|on|off (the decoder's fused decode path: DecoderOptions.fused; auto = its default: on for GPUs, off on CPU adapters) --peer FILE --out FILE --profile
//   --cpu: one more iteration, printing per phase where the JS thread's time went (counters.ts PhaseCpu)
//   --iterations N: N timed iterations after the warm-up, each phase's time their median (one host's update
//   time spread over 0.23-0.41 s from one iteration to the next; the peer takes the same flag); counts are the first's
//   --wall N (default 5; 0 = off): what a user waits for. N more iterations through the run loop that the CLI
//   and the lab use (src/marft/run-loop.ts: checkpoints on the run config's cadence into a folder on disk, as
//   `marft train` writes them), timed by the wall clock from the loop's
//   first iteration to its return (the end's checkpoint included): wallS per iteration beside the trainer's own seconds of the same iterations
//   (loopTrainerS), their ratio (wallRatio), and the checkpoints written. --checkpoint-every K sets the
//   cadence (runLoop.checkpointEvery) for that loop. coldS: the first (warm-up) iteration's wall time, when
//   every pipeline is made; coldRatio: coldS over the timed iteration's.

import { readFileSync, writeFileSync } from 'node:fs';
import { acquireNodeGpu, ensureVulkanEnv } from '../src/gpu/node.ts';
import { formatKernelTable, kernelRows } from '../src/common/profile-table.ts';
import { parseModelConfig } from '../src/model/config.ts';
import { Decoder } from '../src/model/decoder.ts';
import { loadDecoder } from '../src/model/load.ts';
import { nodeModelFiles } from '../src/model/node-files.ts';
import type { LoadedTokenizer } from '../src/model/tokenizer.ts';
import { uploadWeights } from '../src/model/weights.ts';
import { createTrainState, releaseTrainState } from '../src/marft/state.ts';
import { Trainer } from '../src/marft/trainer.ts';
import { benchModelConfigJson, randomWeights, syntheticTokenizer } from './random-model.ts';
import { benchModelFolder } from './lab-server.ts';
import { memoryFiles } from '../src/model/folder.ts';
import { presetBenchConfig, presetEpisodes, randomModelBenchConfig } from './bench-configs.ts';
import { PhaseCounter, PhaseCpu, PhaseProfile, countsLine, cpuLine } from './counters.ts';
import { median } from '../kernels/timing.ts';
import type { Phase } from '../src/marft/trainer.ts';
import { runLoop } from '../src/marft/run-loop.ts';
import { nodeStore } from '../src/platform/storage/node.ts';
import { nodeSandbox } from '../src/platform/sandbox/node.ts';
import { Envs } from '../src/envs/registry.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

await ensureVulkanEnv();
const arg = (n: string, d: string): string => {
  const i = process.argv.indexOf(`--${n}`);
  return i > 0 ? process.argv[i + 1] : d;
};

/** Each agent's mean prompt tokens, "P0,P1,...": the peer (bench/baselines/iteration.py --prompts) takes the same. */
function promptTokens(actions: ReadonlyArray<{ agent: number; promptIds: readonly number[] }>, agents: number): string {
  return Array.from({ length: agents }, (_, i) => {
    const ps = actions.filter((a) => a.agent === i).map((a) => a.promptIds.length);
    return Math.round(ps.reduce((x, y) => x + y, 0) / Math.max(1, ps.length));
  }).join(',');
}

const gpu = await acquireNodeGpu({ log: console.log });
const envs = new Envs(nodeSandbox);
const soft = gpu.adapter.isFallback;
const fusedArg = arg('fused', 'auto');
if (!['auto', 'on', 'off'].includes(fusedArg)) throw new Error(`--fused must be auto, on or off, got ${fusedArg}`);
const fused = fusedArg === 'auto' ? undefined : fusedArg === 'on';
const preset = process.argv.includes('--preset') ? arg('preset', '') : null;
const presetEpisodeCount = preset === null ? null : presetEpisodes(preset);
const episodes = Number(arg('episodes', presetEpisodeCount !== null ? (soft ? '1' : String(presetEpisodeCount)) : soft ? '2' : '8'));
const maxNew = Number(arg('new', soft ? '4' : '128'));
const agentsN = Number(arg('agents', '2')) as 1 | 2 | 3 | 4;
const iterations = Math.max(1, Number(arg('iterations', '1')));
const dtype = arg('dtype', 'bf16') as 'bf16' | 'f32';
const names = preset ? ['builtin'] : arg('models', soft ? 'tiny' : 'smollm2-135m,builtin').split(',');
const peer = process.argv.includes('--peer')
  ? (JSON.parse(readFileSync(arg('peer', ''), 'utf8')) as { device: string; rows: Array<Record<string, number | string>> })
  : null;
const rows: Array<Record<string, number | string>> = [];

const recompute = arg('recompute', 'auto');
/**
 * --tokenizer lab: a random model as bench:browser's lab loads it (bench/lab-server.ts benchModelFolder: BF16
 * weights, the built-in tokenizer padded to the vocab), not the synthetic one-token-a-character tokenizer.
 * Its inert ids decode to one character each, as the synthetic ones do, but its prompts are the built-in
 * tokenizer's (fewer tokens: its merges), so a Node figure beside a browser one needs this.
 */
const labTokenizer = arg('tokenizer', 'synthetic') === 'lab';
/** The trainer's maxTokens (default 8192 for random models; the preset runs and the lab take the trainer's default, 4096). */
const maxTokensArg = process.argv.includes('--max-tokens') ? arg('max-tokens', '') : null;
/**
 * N iterations through the run loop with checkpoints written to a folder on disk on the config's cadence
 * (--checkpoint-every overrides it): the wall clock per iteration beside the trainer's own seconds.
 */
async function wallClock(
  state: ReturnType<typeof createTrainState>,
  decoder: Decoder,
  tokenizer: LoadedTokenizer,
  n: number,
): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'marft-wall-'));
  const every = process.argv.includes('--checkpoint-every') ? Number(arg('checkpoint-every', '')) : undefined;
  try {
    const trainerS: number[] = [];
    let written = 0;
    const start = state.iteration;
    let t0 = performance.now();
    await runLoop({ gpu, envs, decoder, tokenizer, model: decoder.config }, state, {
      store: nodeStore(dir),
      dir: 'run',
      baseModel: 'bench',
      until: state.iteration + n,
      checkpointEvery: every,
      maxTokens: maxTokensArg ? Number(maxTokensArg) : preset ? undefined : 8192,
      onIteration: (res) => trainerS.push(res.metrics.seconds.total),
      // timed from the end of the start's save (a new run folder's first checkpoint) to the loop's return
      onEvent: (e) => {
        if (e.kind === 'saved' && e.iteration === start && written === 0) t0 = performance.now();
        else if (e.kind === 'saved') written++;
      },
    });
    const wall = (performance.now() - t0) / 1000;
    const sum = trainerS.reduce((a, b) => a + b, 0);
    return { wallIterations: n, wallS: wall / n, loopTrainerS: sum / n, wallRatio: wall / sum, checkpointsWritten: written };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const name of names) {
  gpu.pool.resetPeak();
  let decoder: Decoder;
  let tokenizer: LoadedTokenizer;
  if (name === 'builtin' || labTokenizer) {
    // a model folder: the built-in model's, or a random model's as bench:browser's lab gets it (BF16 weights
    // with the built-in tokenizer padded to the vocab)
    const builtin = arg('builtin', 'public/models/marft-tiny');
    const files = name === 'builtin' ? await nodeModelFiles(builtin) : memoryFiles(name, benchModelFolder(name, builtin));
    const l = await loadDecoder(gpu, files, { fused });
    decoder = l.decoder;
    tokenizer = l.model.tokenizer!;
  } else {
    const mc = parseModelConfig(benchModelConfigJson(name));
    decoder = new Decoder(gpu, mc, uploadWeights(gpu, mc, randomWeights(mc, 1), dtype === 'bf16' ? { storeAs: 'bf16' } : {}), { fused });
    tokenizer = syntheticTokenizer(mc.vocabSize);
  }
  const config = preset ? presetBenchConfig(preset, episodes) : randomModelBenchConfig({ agents: agentsN, maxNew, episodes });
  const state = createTrainState(gpu, decoder.config, config);
  const weightsMiB = gpu.pool.stats.bytesAllocated / 2 ** 20; // base weights, adapters, critic, optimizer state
  const counter = new PhaseCounter(gpu);
  const split = new PhaseProfile(gpu);
  let onPhase: ((phase: Phase) => void) | null = null; // --cpu's split, for its own iteration
  const onProgress = (phase: Phase): void => {
    counter.onProgress(phase);
    split.onProgress(phase);
    onPhase?.(phase);
  };
  const trainer = new Trainer({
    gpu,
    envs,
    decoder,
    tokenizer,
    state,
    maxTokens: maxTokensArg ? Number(maxTokensArg) : preset ? undefined : 8192,
    recompute: recompute === 'auto' ? 'auto' : recompute === 'on',
    onProgress,
  });
  const cold0 = performance.now();
  await trainer.iteration(); // warm-up: pipelines compile
  const coldS = (performance.now() - cold0) / 1000;
  counter.begin();
  const cpu0 = process.cpuUsage();
  const timed = await trainer.iteration();
  const m = timed.metrics;
  const cpu = process.cpuUsage(cpu0);
  const { phases, iteration: perIteration } = counter.end();
  const all = [m];
  for (let i = 1; i < iterations; i++) all.push((await trainer.iteration()).metrics);
  const sec = (k: keyof typeof m.seconds): number => median(all.map((x) => x.seconds[k]));
  const gen = Object.values(m.agents).reduce((s, a) => s + a.tokens, 0);
  const row: Record<string, number | string> = {
    model: preset ? `${name} (${preset} preset)` : name,
    agents: config.graph.agents.length,
    episodes,
    maxNew: Math.max(...config.graph.agents.map((a) => a.maxNewTokens)),
    rolloutS: sec('rollout'),
    scoreS: sec('score'),
    advantagesS: sec('advantages'),
    updateS: sec('update'),
    totalS: sec('total'),
    genTokS: median(all.map((x) => x.tokensPerSecond)),
    iterations,
    generated: gen,
    peakMiB: gpu.pool.stats.peakBytes / 2 ** 20,
    weightsMiB,
    recompute: String(trainer.recompute),
    microTokens: trainer.maxTokens,
    microLogitRows: trainer.maxLogitRows,
    trainTokens: trainer.trainTokens,
    cpuS: (cpu.user + cpu.system) / 1e6,
    dispatches: perIteration.dispatches,
    readbacks: perIteration.reads,
    submits: perIteration.submits,
    rolloutDispatches: phases.rollout?.dispatches ?? 0,
    scoreDispatches: phases.score?.dispatches ?? 0,
    updateDispatches: phases.update?.dispatches ?? 0,
    dispatchesPerDecodeStep: (phases.rollout?.dispatches ?? 0) / (gen / episodes),
    dispatchesPerTrainedToken: (phases.update?.dispatches ?? 0) / gen,
    promptTokens: promptTokens(
      timed.episodes.flatMap((e) => e.actions),
      config.graph.agents.length,
    ),
  };
  row.coldS = coldS;
  row.coldRatio = coldS / m.seconds.total;
  const wallN = Number(arg('wall', '5'));
  if (wallN > 0) Object.assign(row, await wallClock(state, decoder, tokenizer, wallN));
  const p = peer?.rows.find((r) => r.model === name);
  if (p && (p.prompts ?? '64,208') !== row.promptTokens) {
    console.log(
      `  note: the peer's prompts (${p.prompts ?? '64,208'} tokens) differ from these (${row.promptTokens}): run it with --prompts ${row.promptTokens} to compare the same work`,
    );
  }
  if (p) {
    row.torchTotalS = p.total_s;
    row.torchRolloutS = p.rollout_s;
    row.speedupTotal = (p.total_s as number) / sec('total');
    row.speedupRollout = (p.rollout_s as number) / sec('rollout');
    row.torchPeakMiB = p.peak_mib;
  }
  rows.push(row);
  console.log(JSON.stringify(row));
  for (const [phase, c] of Object.entries(phases)) console.log(`  ${phase}: ${countsLine(c)}`);
  if (process.argv.includes('--cpu')) {
    const cpuSplit = new PhaseCpu(gpu);
    onPhase = cpuSplit.onProgress;
    cpuSplit.begin();
    await trainer.iteration();
    const byPhase = cpuSplit.end();
    onPhase = null;
    console.log(`  the JS thread in one more iteration (${name}):`);
    for (const [phase, c] of Object.entries(byPhase)) console.log(`    ${phase}: ${cpuLine(c)}`);
  }
  if (process.argv.includes('--profile')) {
    split.begin();
    await trainer.iteration();
    const byPhase = await split.end();
    console.log(`  per-kernel GPU time of one iteration (${name}):\n${formatKernelTable(kernelRows(byPhase.flatMap(([, t]) => t)), 15)}`);
    for (const [phase, t] of byPhase)
      if (phase !== 'rollout' && t.length) console.log(`  ${phase}:\n${formatKernelTable(kernelRows(t), 40)}`);
  }
  releaseTrainState(gpu, state);
  gpu.trim();
}
const cols = [
  'model',
  'agents',
  'wallS',
  'loopTrainerS',
  'wallRatio',
  'checkpointsWritten',
  'coldS',
  'coldRatio',
  'recompute',
  'rolloutS',
  'scoreS',
  'advantagesS',
  'updateS',
  'totalS',
  'genTokS',
  'weightsMiB',
  'peakMiB',
  'torchTotalS',
  'speedupTotal',
  'torchRolloutS',
  'speedupRollout',
  'torchPeakMiB',
  'cpuS',
  'dispatches',
  'readbacks',
  'submits',
  'dispatchesPerDecodeStep',
  'dispatchesPerTrainedToken',
];
const fmt = (v: unknown) => (typeof v === 'number' ? (v >= 100 ? v.toFixed(0) : v.toPrecision(3)) : String(v ?? ''));
console.log(
  `\nMARFT iteration on ${gpu.adapter.description || gpu.adapter.vendor} (${episodes} episodes, ${preset ? `the ${preset} preset` : `${agentsN} agents, ${maxNew} new tokens, ${dtype} base`})${peer ? `, PyTorch peer on ${peer.device}` : ''}`,
);
console.log(`| ${cols.join(' | ')} |\n|${cols.map(() => '---').join('|')}|`);
for (const r of rows) console.log(`| ${cols.map((c) => fmt(r[c])).join(' | ')} |`);
if (process.argv.includes('--out')) writeFileSync(arg('out', ''), JSON.stringify({ adapter: gpu.adapter, rows }, null, 1));
process.exit(0);
