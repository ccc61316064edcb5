// `npm run bench:model`: forward+backward tokens/s (LoRA training step shape) and batched decode tokens/s
// for a tiny model and a SmolLM2-135M-shaped random model, on whatever GPU Dawn finds. With --peer FILE
// (bench/baselines/model.py's JSON from the same GPU) it prints the ratios against transformers + peft.
// Options: --models tiny,smollm2-135m  --batch 8 --seq 256 --prompt 32 --new 128  --out FILE  --peer FILE
//          --profile (per-kernel GPU time of one training step, from timestamp queries)
// Dispatch counts (Gpu counters): per trained token of the forward+backward step, and per decode step,
// exactly: (a generation of NEW tokens - one of 1 token, i.e. the prefill and first sample) / (NEW - 1).

import { readFileSync, writeFileSync } from 'node:fs';
import { acquireNodeGpu, ensureVulkanEnv } from '../src/gpu/node.ts';
import { formatKernelTable, kernelRows } from '../src/common/profile-table.ts';
import { parseModelConfig } from '../src/model/config.ts';
import { Decoder } from '../src/model/decoder.ts';
import { generate } from '../src/model/generate.ts';
import { createLoraSet } from '../src/model/lora-set.ts';
import { Rng } from '../src/common/rng.ts';
import { releaseWeights, uploadWeights } from '../src/model/weights.ts';
import { benchModelConfigJson, randomWeights } from './random-model.ts';
import { counts, since } from './counters.ts';

await ensureVulkanEnv();
const arg = (n: string, d: string): string => {
  const i = process.argv.indexOf(`--${n}`);
  return i > 0 ? process.argv[i + 1] : d;
};

const gpu = await acquireNodeGpu({ log: console.log });
const soft = gpu.adapter.isFallback;
const B = Number(arg('batch', soft ? '2' : '8'));
const T = Number(arg('seq', soft ? '16' : '256'));
const P = Number(arg('prompt', soft ? '4' : '32'));
const NEW = Number(arg('new', soft ? '4' : '128'));
const names = arg('models', soft ? 'tiny' : 'tiny,smollm2-135m').split(',');
const peer = process.argv.includes('--peer')
  ? (JSON.parse(readFileSync(arg('peer', ''), 'utf8')) as { device: string; rows: Array<Record<string, number | string>> })
  : null;
const rows: Array<Record<string, number | string>> = [];

for (const name of names) {
  for (const dtype of ['f32', 'bf16'] as const) {
    const config = parseModelConfig(benchModelConfigJson(name));
    const weights = uploadWeights(gpu, config, randomWeights(config, 1), dtype === 'bf16' ? { storeAs: 'bf16' } : {});
    const dec = new Decoder(gpu, config, weights);
    const lora = createLoraSet(gpu, config, { r: 8, alpha: 16, targets: ['q_proj', 'v_proj'], slots: 1 }, 2);
    const rng = new Rng(3);
    const ids = Int32Array.from({ length: B * T }, () => rng.int(config.vocabSize));
    const dlogits = gpu.upload(
      Float32Array.from({ length: B * T * config.vocabSize }, () => (rng.next() - 0.5) * 1e-3),
      [B * T, config.vocabSize],
      'f32',
      'dlogits',
    );
    const slots = new Int32Array(B);
    const step = async (): Promise<void> => {
      const st = dec.forward({ B, T, ids, adapters: lora, slots }, { save: true });
      dec.backward(st, dlogits, null);
      dec.release(st);
      await gpu.sync();
    };
    await step();
    const reps = soft ? 1 : 5;
    const c0 = counts(gpu);
    let t0 = performance.now();
    for (let i = 0; i < reps; i++) await step();
    const trainMs = (performance.now() - t0) / reps;
    const train = since(gpu, c0);
    const prompts = Array.from({ length: B }, () => Array.from({ length: P }, () => rng.int(config.vocabSize)));
    const gen = (n = NEW) =>
      generate(dec, prompts, {
        maxNewTokens: n,
        sampling: { temperature: 0 },
        seed: 1,
        adapters: lora,
        slots: new Array(B).fill(0),
        syncEvery: 16,
      });
    await gen();
    const c1 = counts(gpu);
    t0 = performance.now();
    await gen();
    const decodeMs = performance.now() - t0;
    const decode = since(gpu, c1);
    const c2 = counts(gpu);
    await gen(1);
    const prefill = since(gpu, c2);
    const row: Record<string, number | string> = {
      model: name,
      dtype,
      B,
      T,
      fwdBwdMs: trainMs,
      fwdBwdTokS: (B * T) / (trainMs / 1000),
      decodeTokS: (B * NEW) / (decodeMs / 1000),
      peakMiB: gpu.pool.stats.peakBytes / 2 ** 20,
      dispatchesPerTrainedToken: train.dispatches / (reps * B * T),
      readbacksPerTrainStep: train.reads / reps,
      dispatchesPerDecodeStep: NEW > 1 ? (decode.dispatches - prefill.dispatches) / (NEW - 1) : Number.NaN,
      readbacksPerGenerate: decode.reads,
    };
    const p = peer?.rows.find((r) => r.model === name && r.dtype === dtype);
    const pf = peer?.rows.find((r) => r.model === name && r.dtype === 'fp32');
    if (p) {
      row.torchFwdBwdTokS = p.fwd_bwd_tok_s;
      row.torchDecodeTokS = p.decode_tok_s;
    }
    if (pf) {
      row.vsTorchFp32FwdBwd = (row.fwdBwdTokS as number) / (pf.fwd_bwd_tok_s as number);
      row.vsTorchFp32Decode = (row.decodeTokS as number) / (pf.decode_tok_s as number);
    }
    rows.push(row);
    console.log(JSON.stringify(row));
    if (process.argv.includes('--profile')) {
      gpu.startProfile();
      await step();
      console.log(
        `  per-kernel GPU time of one forward+backward (${name} ${dtype}):\n${formatKernelTable(kernelRows(await gpu.stopProfile()), 12)}`,
      );
    }
    gpu.release(dlogits);
    releaseWeights(gpu, weights);
    gpu.trim();
  }
}
const cols = [
  'model',
  'dtype',
  'fwdBwdTokS',
  'torchFwdBwdTokS',
  'vsTorchFp32FwdBwd',
  'decodeTokS',
  'torchDecodeTokS',
  'vsTorchFp32Decode',
  'peakMiB',
  'dispatchesPerTrainedToken',
  'dispatchesPerDecodeStep',
  'readbacksPerGenerate',
];
const fmt = (v: unknown) => (typeof v === 'number' ? (v >= 100 ? v.toFixed(0) : v.toPrecision(3)) : String(v ?? ''));
console.log(
  `\nmodel benchmark on ${gpu.adapter.description || gpu.adapter.vendor} (B=${B}, T=${T}, decode ${P}+${NEW})${peer ? `, PyTorch peer on ${peer.device}` : ''}`,
);
console.log(`| ${cols.join(' | ')} |\n|${cols.map(() => '---').join('|')}|`);
for (const r of rows) console.log(`| ${cols.map((c) => fmt(r[c])).join(' | ')} |`);
if (process.argv.includes('--out')) writeFileSync(arg('out', ''), JSON.stringify({ adapter: gpu.adapter, rows }, null, 1));
process.exit(0);
