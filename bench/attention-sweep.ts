// Sweep of the causal attention backward's variants (kernels/attention: 'v1' and the register-blocked tiles
// of backward.wgsl), to fill the launcher's BACKWARD_CHOICE table. Each variant is timed as the launcher
// runs it (prep, dq, dk/dv, and the sum of the dk/dv splits where it has them), with attention.bench.ts's
// inputs, timer and FLOP convention (backward = 2.5x the causal forward), and checked against v1's
// gradients on the same inputs (a variant that disagrees is marked BAD and never picked).
//
// The sweep is staged, as dq and dk/dv are separate kernels: (1) every dk/dv tile x split with a fixed dq,
// (2) every dq tile with and without the fused prep, and from the stored dS (ds), with a fixed dk/dv,
// (3) the best of each together;
// --full times the whole product instead. It ends with the best variant per shape, its per-kernel GPU times
// (timestamp queries, where the device has them), and the BACKWARD_CHOICE rows those results give.
//
//   node scripts/bundle.mjs bench/attention-sweep.ts .devcarry/app && node .devcarry/app/attention-sweep.mjs --out F
// Options: --quick (one tiny shape, few variants: a SwiftShader check)  --full  --budget MS (per timing, 300)
//          --shapes BxTxNHxNKVxHS,...  --out FILE.json
//          --peer FILE.json  PyTorch's SDPA figures (bench/baselines/kernels.py --attn with the same shapes), shown as ratios

import { readFileSync, writeFileSync } from 'node:fs';
import { type AttentionBenchCase, attentionBwdFlops, benchTensors, timeIt } from '../kernels/attention/attention.bench.ts';
import {
  BACKWARD_CHOICE, type BackwardVariant, type BlockedBackward, attentionBackward, attentionForward, backwardChoice, backwardName, blockedUnfit,
} from '../kernels/attention/attention.ts';
import { acquireNodeGpu, ensureVulkanEnv } from '../src/gpu/node.ts';

await ensureVulkanEnv();

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const quick = process.argv.includes('--quick');
const full = process.argv.includes('--full');
const budgetMs = Number(arg('budget') ?? (quick ? 1 : 300));
const peer: { device: string; rows: Array<{ op: string; shape: string; bwd_gflops?: number }> } | null =
  arg('peer') ? JSON.parse(readFileSync(arg('peer')!, 'utf8')) : null;
const torchBwd = (shape: string) => peer?.rows.find((r) => r.op === 'attention' && r.shape === shape)?.bwd_gflops;

// B8 T512, B4 T1024 and B2 T2048 are bench:kernels' attention shapes; B8 T170 a 135M training iteration's.
const shapes: AttentionBenchCase[] = (arg('shapes') ?? (quick ? '1x40x4x2x64' : '8x512x9x3x64,4x1024x9x3x64,2x2048x16x4x64,8x170x9x3x64'))
  .split(',').filter(Boolean).map((s) => s.split('x').map(Number)).map(([B, T, NH, NKV, HS]) => ({ B, T, NH, NKV, HS }));

// Candidates: [keys per workgroup, rows per tile, vec4 columns per thread] of dk/dv, [rows per workgroup,
// keys per tile, vec4 columns per thread] of dq. Those the device cannot fit are listed as skipped.
const DKDV: Array<[number, number, number]> = quick
  ? [[32, 16, 1], [16, 32, 2]]
  : [[32, 32, 1], [32, 32, 2], [32, 16, 1], [32, 16, 2], [16, 32, 1], [16, 32, 2], [16, 16, 1], [64, 8, 2], [64, 16, 1], [64, 16, 2], [64, 32, 2]];
const SPLITS = quick ? [1, 2] : [1, 2, 4, 8];
const DQ: Array<[number, number, number]> = quick
  ? [[32, 16, 1], [32, 16, 2]]
  : [[32, 32, 1], [32, 32, 2], [32, 16, 1], [32, 16, 2], [16, 32, 1], [64, 16, 1], [64, 16, 2], [64, 32, 2]];
const FUSED = [false, true];
// dq from the stored dS needs little workgroup memory: larger tiles.
const DQ_DS: Array<[number, number, number]> = quick ? [[64, 32, 1]] : [[32, 32, 1], [64, 32, 2], [64, 32, 4], [64, 64, 4], [128, 32, 4]];
const BASE: BlockedBackward = { kBK: 32, kBQ: 16, kW: 1, qBR: 32, qBC: 16, qW: 1, split: 1, fusePrep: false }; // fits 32 KiB at HS = 64

const gpu = await acquireNodeGpu({ log: console.log });
const L = gpu.limits;
console.log(
  `limits: workgroup memory ${L.maxComputeWorkgroupStorageSize} B, ${L.maxComputeInvocationsPerWorkgroup} invocations, ` +
    `${L.maxStorageBuffersPerShaderStage} storage buffers, binding size ${L.maxStorageBufferBindingSize} B (a ds variant whose dS ` +
    `(B * NH * T * T floats) exceeds it runs without ds); subgroups ${gpu.hasSubgroups}`,
);

interface Row { shape: string; T: number; variant: string; stage: string; ms: number; gflops: number; vsV1: number; err: number; bad: boolean }
const rows: Row[] = [];
const skipped: Array<{ variant: string; why: string }> = [];
const best: Record<string, Row> = {};
const kernels: Record<string, Array<{ key: string; msPerCall: number }>> = {};
const shapeStr = (c: AttentionBenchCase) => `${c.B}x${c.T}x${c.NH}x${c.NKV}x${c.HS}`;
const num = (x: number) => (x >= 100 ? x.toFixed(0) : x.toPrecision(3));

/** max |a - b| / max |b| over the three gradients. */
function relErr(a: Float32Array[], b: Float32Array[]): number {
  let num = 0;
  let den = 0;
  for (let t = 0; t < a.length; t++) {
    for (let i = 0; i < a[t].length; i++) {
      const d = Math.abs(a[t][i] - b[t][i]);
      num = Number.isNaN(d) ? Infinity : Math.max(num, d);
      den = Math.max(den, Math.abs(b[t][i]));
    }
  }
  return num / Math.max(den, 1e-30);
}

for (const c of shapes) {
  const shape = shapeStr(c);
  const t = benchTensors(gpu, c);
  // path 'tiled' also on a CPU adapter, whose default is 'regs'
  attentionForward(gpu, t.out, t.lse, t.q, t.k, t.v, { path: 'tiled' });
  const backward = (variant: BackwardVariant | string) => () =>
    attentionBackward(gpu, t.dq, t.dk, t.dv, t.dout, t.q, t.k, t.v, t.out, t.lse, { path: 'tiled', backward: variant });
  const grads = () => gpu.readMany([t.dq, t.dk, t.dv]) as Promise<Float32Array[]>;
  const flops = attentionBwdFlops(c);
  backward('v1')();
  const ref = await grads();
  let v1Ms = 0;
  const seen = new Map<string, Row>();

  const measure = async (variant: BackwardVariant, stage: string): Promise<Row | null> => {
    const name = backwardName(variant);
    if (seen.has(name)) return seen.get(name)!;
    if (variant !== 'v1') {
      const why = blockedUnfit(c.HS, variant, L);
      if (why) {
        if (!skipped.some((s) => s.variant === name)) skipped.push({ variant: name, why });
        return null;
      }
    }
    let ms: number;
    let err: number;
    try {
      ms = await timeIt(gpu, backward(variant), budgetMs);
      err = relErr(await grads(), ref);
    } catch (e) {
      // A variant this driver rejects (a validation error) is reported and skipped; the sweep goes on.
      console.log(`${shape}  ${stage.padEnd(5)} ${name.padEnd(40)} FAILED: ${(e as Error).message.split('\n')[0]}`);
      skipped.push({ variant: name, why: `failed: ${(e as Error).message.split('\n')[0]}` });
      return null;
    }
    if (variant === 'v1') v1Ms = ms;
    const row: Row = { shape, T: c.T, variant: name, stage, ms, gflops: flops / ms / 1e6, vsV1: v1Ms / ms, err, bad: !(err < 1e-3) };
    rows.push(row);
    seen.set(name, row);
    console.log(`${shape}  ${stage.padEnd(5)} ${name.padEnd(40)} ${ms.toFixed(4).padStart(9)} ms ${num(row.gflops).padStart(7)} GFLOP/s  x${row.vsV1.toFixed(2)} v1  err ${err.toExponential(1)}${row.bad ? '  BAD' : ''}`);
    return row;
  };
  const better = (a: Row | null, b: Row | null) => (!b || b.bad ? a : !a || b.ms < a.ms ? b : a);

  await measure('v1', 'v1');
  await measure(backwardChoice(c.T, c.HS), 'now');
  let top: Row | null = null;
  if (full) {
    for (const [kBK, kBQ, kW] of DKDV) for (const split of SPLITS) {
      for (const [qBR, qBC, qW] of DQ) for (const fusePrep of FUSED) top = better(top, await measure({ kBK, kBQ, kW, qBR, qBC, qW, split, fusePrep }, 'full'));
      for (const [qBR, qBC, qW] of DQ_DS) top = better(top, await measure({ kBK, kBQ, kW, qBR, qBC, qW, split, fusePrep: false, ds: true }, 'full'));
    }
  } else {
    let kv: Row | null = null;
    let kvV: BlockedBackward = BASE;
    for (const [kBK, kBQ, kW] of DKDV) for (const split of SPLITS) {
      const v = { ...BASE, kBK, kBQ, kW, split };
      const r = better(kv, await measure(v, 'dkdv'));
      if (r !== kv) { kv = r; kvV = v; }
    }
    let qq: Row | null = null;
    let qV: BlockedBackward = BASE;
    const dqs = [
      ...DQ.flatMap(([qBR, qBC, qW]) => FUSED.map((fusePrep) => ({ ...BASE, qBR, qBC, qW, fusePrep }))),
      ...DQ_DS.map(([qBR, qBC, qW]) => ({ ...BASE, qBR, qBC, qW, ds: true })),
    ];
    for (const v of dqs) {
      const r = better(qq, await measure(v, 'dq'));
      if (r !== qq) { qq = r; qV = v; }
    }
    const both = { ...kvV, qBR: qV.qBR, qBC: qV.qBC, qW: qV.qW, fusePrep: qV.fusePrep, ds: qV.ds };
    top = better(better(kv, qq), await measure(both, 'both'));
  }
  top = better(seen.get('v1') ?? null, top);
  if (top) best[shape] = top;

  // Where v1's and the best one's time goes, kernel by kernel (profiling serialises the passes).
  for (const v of gpu.hasTimestamps ? new Set(['v1', top?.variant ?? 'v1']) : []) {
    const n = quick ? 1 : 20;
    gpu.startProfile();
    for (let i = 0; i < n; i++) backward(v)();
    const times = await gpu.stopProfile();
    kernels[`${shape} ${v}`] = times.map((x) => ({ key: x.key, msPerCall: x.ms / n }));
    console.log(`${shape}  kernels of ${v}: ${times.map((x) => `${x.key.split('/').pop()} ${(x.ms / n).toFixed(4)} ms`).join(', ')}`);
  }
  gpu.release(t.q, t.k, t.v, t.dout, t.out, t.lse, t.dq, t.dk, t.dv);
}

for (const s of skipped) console.log(`skipped ${s.variant}: ${s.why}`);
console.log(`\nattention backward on ${gpu.adapter.description || gpu.adapter.vendor} (GFLOP/s = 2.5x the causal forward's FLOPs / time)`);
console.log(`| shape | v1 GFLOP/s | launcher now | best | best GFLOP/s | x v1 | torch GFLOP/s | best / torch |\n|${'---|'.repeat(8)}`);
for (const c of shapes) {
  const shape = shapeStr(c);
  const v1 = rows.find((r) => r.shape === shape && r.variant === 'v1');
  const now = rows.find((r) => r.shape === shape && r.stage === 'now') ?? v1;
  const b = best[shape];
  if (!v1 || !b) continue;
  const torch = torchBwd(shape);
  const vsTorch = torch ? (b.gflops / torch).toFixed(2) : '';
  console.log(`| ${shape} | ${num(v1.gflops)} | ${now ? `${now.variant} ${num(now.gflops)}` : ''} | ${b.variant} | ${num(b.gflops)} | ${(v1.ms / b.ms).toFixed(2)} | ${torch ? num(torch) : ''} | ${vsTorch} |`);
}
// The table rows: the best variant of each measured T (HS = 64 shapes), each serving up to halfway to the next T.
const ts = [...new Set(shapes.filter((c) => c.HS === 64 && best[shapeStr(c)]).map((c) => c.T))].sort((a, b) => a - b);
const choice = ts.map((T, i) => {
  const atT = shapes.filter((c) => c.T === T && best[shapeStr(c)]).map((c) => best[shapeStr(c)]);
  const pick = atT.sort((a, b) => b.vsV1 - a.vsV1)[0];
  return { maxT: i + 1 < ts.length ? Math.floor((T + ts[i + 1]) / 2) : Infinity, variant: pick.variant };
});
console.log(`\nBACKWARD_CHOICE now: ${BACKWARD_CHOICE.map((r) => `{ maxT: ${r.maxT}, variant: '${r.variant}' }`).join(', ')}`);
console.log('BACKWARD_CHOICE from this run (kernels/attention/attention.ts):');
for (const r of choice) console.log(`  { maxT: ${r.maxT === Infinity ? 'Infinity' : r.maxT}, variant: '${r.variant}' },`);
if (arg('out')) {
  writeFileSync(arg('out')!, JSON.stringify({ adapter: gpu.adapter, limits: {
    maxComputeWorkgroupStorageSize: L.maxComputeWorkgroupStorageSize, maxComputeInvocationsPerWorkgroup: L.maxComputeInvocationsPerWorkgroup,
    maxStorageBuffersPerShaderStage: L.maxStorageBuffersPerShaderStage,
  }, rows, best, kernels, skipped, choice: choice.map((r) => ({ ...r, maxT: r.maxT === Infinity ? 'Infinity' : r.maxT })) }, null, 1));
}
process.exit(0);
