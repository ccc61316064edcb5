// `npx tsx bench/decode-step.ts`: one decode step of the MARFT setting (LoRA on every linear module,
// a slot per sequence, some sequences without adapter) on the unfused and the fused decoder path, on
// whatever device Dawn finds, taken apart:
//   - four ways of running a step: unfused, fused (a forward each step), replay (the fused step recorded
//     once and replayed, as generate() does) and replaySplit (the same with each group's prologue as its own
//     dispatch: DecoderOptions.inlinePrologue false);
//   - per step: dispatches, buffer copies and compute passes (Gpu counters);
//   - encodeMs: the JS thread's time to record a step; syncedMs: a step followed by a wait (latency);
//     pipelinedMs: steps submitted one after another with one wait at the end (throughput); gpuMs: the
//     kernels' summed GPU time of a profiled step (timestamp queries, one pass a dispatch);
//   - generate(): tokens/s of a whole greedy generation (batch B, NEW tokens; it replays a recorded
//     step on both paths on a GPU), and the share of the memory-bandwidth limit: the weights read per step
//     over the step's time, against the GPU's peak (H100/H200 by name; --bandwidth GB/s otherwise);
//     greedySameTokens: the share of the fused path's greedy tokens equal to the unfused path's (1 = all).
// Options: --models tiny,smollm2-135m  --batch 8  --prompt 16  --steps 32  --new 128  --dtype f32|bf16
//          --bandwidth GBs  --out FILE

import { writeFileSync } from 'node:fs';
import { acquireNodeGpu, ensureVulkanEnv } from '../src/gpu/node.ts';
import { formatKernelTable, kernelRows } from '../src/common/profile-table.ts';
import { LINEAR_MODULES, type ModelConfig, parseModelConfig } from '../src/model/config.ts';
import { Decoder } from '../src/model/decoder.ts';
import { createKvCache, releaseKvCache } from '../src/model/kv-cache.ts';
import type { Recording } from '../src/gpu/recording.ts';
import { generate } from '../src/model/generate.ts';
import { createLoraSet, releaseLoraSet } from '../src/model/lora-set.ts';
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
const B = Number(arg('batch', '8'));
const P = Number(arg('prompt', '16'));
const STEPS = Number(arg('steps', gpu.cpu ? '4' : '32'));
const NEW = Number(arg('new', gpu.cpu ? '8' : '128'));
const dtype = arg('dtype', 'f32');
const desc = `${gpu.adapter.description} ${gpu.adapter.device}`;
const peakGBs = Number(arg('bandwidth', /H200/i.test(desc) ? '4800' : /H100/i.test(desc) ? '3350' : '0')) || null;

/** Bytes of weights a decode step reads: every layer's projections and the LM head. */
const weightBytes = (c: ModelConfig): number => {
  const { hiddenSize: C, intermediateSize: I, numHeads: NH, numKvHeads: NKV, headDim: HS, numLayers: L, vocabSize: V } = c;
  return (L * (C * (NH + 2 * NKV) * HS + NH * HS * C + 3 * C * I) + V * C) * (dtype === 'bf16' ? 2 : 4);
};

const rows: Array<Record<string, number | string>> = [];
for (const name of arg('models', gpu.cpu ? 'tiny' : 'tiny,smollm2-135m').split(',')) {
  const config = parseModelConfig(benchModelConfigJson(name));
  const weights = uploadWeights(gpu, config, randomWeights(config, 1), dtype === 'bf16' ? { storeAs: 'bf16' } : {});
  const lora = createLoraSet(gpu, config, { r: 8, alpha: 16, targets: [...LINEAR_MODULES], slots: 2 }, 2);
  const slotArr = Array.from({ length: B }, (_, b) => [0, 1, -1][b % 3]);
  const slots = Int32Array.from(slotArr);
  const rng = new Rng(3);
  const prompt = Int32Array.from({ length: B * P }, () => rng.int(config.vocabSize));
  const out: Record<string, number | string> = { model: name, dtype, B, weightMB: weightBytes(config) / 1e6 };
  let greedy: number[] = [];
  for (const key of ['unfused', 'fused', 'replay', 'replaySplit']) {
    const fused = key !== 'unfused';
    const dec = new Decoder(gpu, config, weights, { fused, inlinePrologue: key !== 'replaySplit' });
    const unpin = dec.pinAdapters(lora); // as generate() does
    const cache = createKvCache(gpu, config, B, P + 3 * STEPS + 2, new Int32Array(B * P).fill(1), P);
    const ids = gpu.upload(new Int32Array(B), [B], 'i32', 'bench.ids');
    const slotsGpu = gpu.upload(slots, [B], 'i32', 'bench.slots');
    const posGpu = gpu.tensor([B], 'i32', 'bench.pos');
    let at = P;
    const lengthGpu = key.startsWith('replay') ? gpu.tensor([1], 'i32', 'bench.length') : undefined;
    let rec: Recording | null = null;
    const forward = () =>
      dec.forward({ B, T: 1, ids: new Int32Array(0), idsGpu: ids, posGpu, slotsGpu, adapters: lora, slots }, { cache, logits: 'last' });
    const step = () => {
      gpu.write(posGpu, new Int32Array(B).fill(at++));
      if (lengthGpu) gpu.write(lengthGpu, Int32Array.of(cache.length));
      const t = performance.now();
      if (rec) {
        gpu.replay(rec);
        cache.length += 1;
      } else dec.release(forward());
      return performance.now() - t;
    };
    dec.release(dec.forward({ B, T: P, ids: prompt, adapters: lora, slots }, { cache, logits: 'last' }));
    cache.lengthGpu = lengthGpu;
    step();
    let recorded: ReturnType<typeof forward> | null = null;
    if (lengthGpu) {
      gpu.write(posGpu, new Int32Array(B).fill(at++));
      gpu.write(lengthGpu, Int32Array.of(cache.length));
      gpu.startRecording();
      recorded = forward();
      rec = gpu.stopRecording();
    }
    await gpu.sync();
    // latency: one step, then wait
    const c0 = counts(gpu);
    let encode = 0;
    let t0 = performance.now();
    for (let s = 0; s < STEPS; s++) {
      encode += step();
      await gpu.sync();
    }
    const synced = (performance.now() - t0) / STEPS;
    const per = since(gpu, c0);
    // throughput: steps submitted back to back (the write of the positions submits each), one wait
    t0 = performance.now();
    for (let s = 0; s < STEPS; s++) step();
    await gpu.sync();
    const pipelined = (performance.now() - t0) / STEPS;
    let gpuMs = Number.NaN;
    if (gpu.hasTimestamps && !process.argv.includes('--no-profile')) {
      gpu.startProfile();
      step();
      const times = await gpu.stopProfile();
      gpuMs = times.reduce((a, k) => a + k.ms, 0);
      console.log(`  ${name} ${key}: per-kernel GPU time of one decode step\n${formatKernelTable(kernelRows(times), 8)}`);
    }
    rec?.dispose();
    if (recorded) dec.release(recorded);
    unpin();
    releaseKvCache(gpu, cache);
    gpu.release(ids, slotsGpu, posGpu, lengthGpu);
    Object.assign(out, {
      [`${key}Dispatches`]: per.dispatches / STEPS,
      [`${key}DispatchesPerLayer`]: per.dispatches / STEPS / config.numLayers,
      [`${key}Copies`]: per.copies / STEPS,
      [`${key}Passes`]: per.passes / STEPS,
      [`${key}EncodeMs`]: encode / STEPS,
      [`${key}SyncedMs`]: synced,
      [`${key}PipelinedMs`]: pipelined,
      [`${key}GpuMs`]: gpuMs,
    });
    // whole generations, greedy, no stop token: every sequence runs NEW steps (generate() replays on the fused path)
    if (key === 'replay') continue; // the same decoder as 'fused' (generate() replays); replaySplit's is its own
    const prompts = Array.from({ length: B }, (_, b) => Array.from(prompt.subarray(b * P, (b + 1) * P)));
    const gen = () => generate(dec, prompts, { maxNewTokens: NEW, sampling: { temperature: 0 }, seed: 1, adapters: lora, slots: slotArr });
    await gen();
    t0 = performance.now();
    const { tokens } = await gen();
    const secs = (performance.now() - t0) / 1000;
    // exactness on this device: the fused path's greedy tokens against the unfused path's, token for token
    if (key === 'unfused') greedy = tokens.flat();
    else out.greedySameTokens = tokens.flat().filter((t, i) => t === greedy[i]).length / greedy.length;
    out[`${key}GenTokS`] = (B * NEW) / secs;
    if (peakGBs) out[`${key}BandwidthShare`] = (weightBytes(config) * NEW) / secs / (peakGBs * 1e9);
  }
  rows.push(out);
  console.log(JSON.stringify(out));
  releaseLoraSet(gpu, lora);
  releaseWeights(gpu, weights);
  gpu.trim();
}
const cols = Object.keys(rows[0] ?? {});
const fmt = (v: unknown) => (typeof v === 'number' ? (Math.abs(v) >= 100 ? v.toFixed(0) : v.toPrecision(3)) : String(v ?? ''));
console.log(`\ndecode step on ${gpu.adapter.description || gpu.adapter.vendor}${peakGBs ? ` (peak ${peakGBs} GB/s)` : ''}`);
for (const r of rows) for (const c of cols) console.log(`  ${r.model} ${c}: ${fmt(r[c])}`);
if (process.argv.includes('--out')) writeFileSync(arg('out', ''), JSON.stringify({ adapter: gpu.adapter, peakGBs, rows }, null, 1));
process.exit(0);
