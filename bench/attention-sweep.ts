// Sweep of the causal attention's tiled variants (kernels/attention), to fill the launcher's BACKWARD_CHOICE
// and FORWARD_CHOICE tables. Each backward variant is timed as the launcher runs it (prep, dq, dk/dv, and the
// sum of the dk/dv splits where it has them), with attention.bench.ts's inputs, timer and FLOP convention
// (backward = 2.5x the causal forward), and checked against v1's gradients on the same inputs (a variant that
// disagrees is marked BAD and never picked). Forward variants are timed on --fshapes by their GPU time
// (timestamps, where the device has them), where a ':pad' shape is right-padded as a scoring micro-batch
// (sequence b of B keeps T - floor(b T / 2B) tokens), and checked against the launcher's default forward.
//
// The backward sweep is staged, as dq and dk/dv are separate kernels: (1) every dk/dv tile x split with a
// fixed dq, (2) every dq tile with and without the fused prep, and from the stored dS (ds), with a fixed
// dk/dv, (3) the best of each together; --full times the whole product instead, --variants only the listed
// ones. It ends with the best variant per shape, its per-kernel GPU times (timestamp queries, where the
// device has them), and the choice-table rows those results give.
//
//   node scripts/bundle.mjs bench/attention-sweep.ts .devcarry/app && node .devcarry/app/attention-sweep.mjs --out F
// Options: --quick (one tiny shape, few variants: a SwiftShader check)  --full  --budget MS (per timing, 300)
//          --shapes BxTxNHxNKVxHS,...  (backward; '' for none)  --variants V,V,...  (backward variants to time)
//          --fshapes BxTxNHxNKVxHS[:pad],...  --forward V,V,...  (forward variants; default FORWARD_SET)
//          --out FILE.json  --peer FILE.json  PyTorch's SDPA figures (bench/baselines/kernels.py --attn with the
//          same shapes, unpadded), shown as ratios

import { readFileSync, writeFileSync } from 'node:fs';
import {
  type AttentionBenchCase,
  attentionBwdFlops,
  attentionFwdFlops,
  benchTensors,
  timeIt,
} from '../kernels/attention/attention.bench.ts';
import {
  BACKWARD_CHOICE,
  type BackwardVariant,
  type BlockedBackward,
  FORWARD_CHOICE,
  attentionBackward,
  attentionForward,
  attentionTiles,
  backwardChoice,
  backwardName,
  blockedUnfit,
  forwardChoice,
  forwardName,
  forwardUnfit,
  parseBackward,
  parseForward,
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
const peer: { device: string; rows: Array<{ op: string; shape: string; ms: number; gflops: number; bwd_gflops?: number }> } | null = arg(
  'peer',
)
  ? JSON.parse(readFileSync(arg('peer')!, 'utf8'))
  : null;
const torchRow = (shape: string) => peer?.rows.find((r) => r.op === 'attention' && r.shape === shape);
const torchBwd = (shape: string) => torchRow(shape)?.bwd_gflops;
const parseShape = (s: string): AttentionBenchCase => {
  const [B, T, NH, NKV, HS] = s.split('x').map(Number);
  return { B, T, NH, NKV, HS };
};

// B8 T512, B4 T1024 and B2 T2048 are bench:kernels' attention shapes; B8 T170 a 135M training iteration's.
const shapes: AttentionBenchCase[] = (arg('shapes') ?? (quick ? '1x40x4x2x64' : '8x512x9x3x64,4x1024x9x3x64,2x2048x16x4x64,8x170x9x3x64'))
  .split(',')
  .filter(Boolean)
  .map(parseShape);
const only = arg('variants')?.split(',').filter(Boolean).map(parseBackward);
// Forward: the scoring micro-batches of a 135M MARFT iteration (B 4-8 x T 168-336, right-padded) and
// bench:kernels' shapes.
const fshapes = (
  arg('fshapes') ??
  (quick
    ? '2x40x4x2x64:pad'
    : '4x168x9x3x64:pad,8x168x9x3x64:pad,4x336x9x3x64:pad,8x336x9x3x64:pad,8x512x9x3x64,4x1024x9x3x64,2x2048x16x4x64')
)
  .split(',')
  .filter(Boolean)
  .map((s) => ({ c: parseShape(s.replace(/:pad$/, '')), pad: s.endsWith(':pad'), name: s }));
const FORWARD_SET = quick
  ? ['f32x32', 'f16x16:pf']
  : ['f32x32', 'f32x32:pf', 'f16x32', 'f16x32:pf', 'f16x16:pf', 'f8x32:pf', 'f64x16:pf', 'f64x32:pf', 'f16x64:pf', 'f32x16:pf'];
const forwards = (arg('forward')?.split(',') ?? FORWARD_SET).filter(Boolean);

// Candidates: [keys per workgroup, rows per tile, vec4 columns per thread] of dk/dv, [rows per workgroup,
// keys per tile, vec4 columns per thread] of dq. Those the device cannot fit are listed as skipped.
const DKDV: Array<[number, number, number]> = quick
  ? [
      [32, 16, 1],
      [16, 32, 2],
    ]
  : [
      [32, 32, 1],
      [32, 32, 2],
      [32, 16, 1],
      [32, 16, 2],
      [16, 32, 1],
      [16, 32, 2],
      [16, 16, 1],
      [64, 8, 2],
      [64, 16, 1],
      [64, 16, 2],
      [64, 32, 2],
    ];
const SPLITS = quick ? [1, 2] : [1, 2, 4, 8];
const DQ: Array<[number, number, number]> = quick
  ? [
      [32, 16, 1],
      [32, 16, 2],
    ]
  : [
      [32, 32, 1],
      [32, 32, 2],
      [32, 16, 1],
      [32, 16, 2],
      [16, 32, 1],
      [64, 16, 1],
      [64, 16, 2],
      [64, 32, 2],
    ];
const FUSED = [false, true];
// dq from the stored dS needs little workgroup memory: larger tiles.
const DQ_DS: Array<[number, number, number]> = quick
  ? [[64, 32, 1]]
  : [
      [32, 32, 1],
      [64, 32, 2],
      [64, 32, 4],
      [64, 64, 4],
      [128, 32, 4],
    ];
const BASE: BlockedBackward = { kBK: 32, kBQ: 16, kW: 1, qBR: 32, qBC: 16, qW: 1, split: 1, fusePrep: false }; // fits 32 KiB at HS = 64

const gpu = await acquireNodeGpu({ log: console.log });
const L = gpu.limits;
console.log(
  `limits: workgroup memory ${L.maxComputeWorkgroupStorageSize} B, ${L.maxComputeInvocationsPerWorkgroup} invocations, ` +
    `${L.maxStorageBuffersPerShaderStage} storage buffers, binding size ${L.maxStorageBufferBindingSize} B (a ds variant whose dS ` +
    `(B * NH * T * T floats) exceeds it runs without ds); subgroups ${gpu.hasSubgroups}`,
);

interface Row {
  shape: string;
  T: number;
  variant: string;
  stage: string;
  ms: number;
  gflops: number;
  vsV1: number;
  err: number;
  bad: boolean;
}
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
    console.log(
      `${shape}  ${stage.padEnd(5)} ${name.padEnd(40)} ${ms.toFixed(4).padStart(9)} ms ${num(row.gflops).padStart(7)} GFLOP/s  x${row.vsV1.toFixed(2)} v1  err ${err.toExponential(1)}${row.bad ? '  BAD' : ''}`,
    );
    return row;
  };
  const better = (a: Row | null, b: Row | null) => (!b || b.bad ? a : !a || b.ms < a.ms ? b : a);

  await measure('v1', 'v1');
  const nowRow = await measure(backwardChoice(c.T, c.HS), 'now');
  let top: Row | null = better(null, nowRow);
  if (only) {
    for (const v of only) top = better(top, await measure(v, 'list'));
  } else if (full) {
    for (const [kBK, kBQ, kW] of DKDV)
      for (const split of SPLITS) {
        for (const [qBR, qBC, qW] of DQ)
          for (const fusePrep of FUSED) top = better(top, await measure({ kBK, kBQ, kW, qBR, qBC, qW, split, fusePrep }, 'full'));
        for (const [qBR, qBC, qW] of DQ_DS)
          top = better(top, await measure({ kBK, kBQ, kW, qBR, qBC, qW, split, fusePrep: false, ds: true }, 'full'));
      }
  } else {
    let kv: Row | null = null;
    let kvV: BlockedBackward = BASE;
    for (const [kBK, kBQ, kW] of DKDV)
      for (const split of SPLITS) {
        const v = { ...BASE, kBK, kBQ, kW, split };
        const r = better(kv, await measure(v, 'dkdv'));
        if (r !== kv) {
          kv = r;
          kvV = v;
        }
      }
    let qq: Row | null = null;
    let qV: BlockedBackward = BASE;
    const dqs = [
      ...DQ.flatMap(([qBR, qBC, qW]) => FUSED.map((fusePrep) => ({ ...BASE, qBR, qBC, qW, fusePrep }))),
      ...DQ_DS.map(([qBR, qBC, qW]) => ({ ...BASE, qBR, qBC, qW, ds: true })),
    ];
    for (const v of dqs) {
      const r = better(qq, await measure(v, 'dq'));
      if (r !== qq) {
        qq = r;
        qV = v;
      }
    }
    const both = { ...kvV, qBR: qV.qBR, qBC: qV.qBC, qW: qV.qW, fusePrep: qV.fusePrep, ds: qV.ds };
    top = better(better(kv, qq), await measure(both, 'both'));
  }
  top = better(seen.get('v1') ?? null, top);
  if (top) best[shape] = top;

  // Where the launcher's and the best one's time goes, kernel by kernel (profiling serialises the passes).
  for (const v of gpu.hasTimestamps ? new Set([nowRow?.variant ?? 'v1', top?.variant ?? 'v1']) : []) {
    const n = quick ? 1 : 20;
    gpu.startProfile();
    for (let i = 0; i < n; i++) backward(v)();
    const times = await gpu.stopProfile();
    kernels[`${shape} ${v}`] = times.map((x) => ({ key: x.key, msPerCall: x.ms / n }));
    console.log(`${shape}  kernels of ${v}: ${times.map((x) => `${x.key.split('/').pop()} ${(x.ms / n).toFixed(4)} ms`).join(', ')}`);
  }
  gpu.release(t.q, t.k, t.v, t.dout, t.out, t.lse, t.dq, t.dk, t.dv);
}

// ---- forward ----
interface FRow {
  shape: string;
  T: number;
  variant: string;
  ms: number;
  gflops: number;
  vsNow: number;
  err: number;
  bad: boolean;
}
const frows: FRow[] = [];
const lanes = attentionTiles(64, L.maxComputeWorkgroupStorageSize, L.maxComputeInvocationsPerWorkgroup)?.lanes ?? 4;
for (const { c, pad, name: shape } of fshapes) {
  const t = benchTensors(gpu, c);
  // Right padding: sequence b keeps T - floor(b T / 2B) tokens (the first is full length).
  const keep = (b: number) => c.T - Math.floor((b * c.T) / (2 * c.B));
  const mask = pad
    ? gpu.upload(
        Int32Array.from({ length: c.B * c.T }, (_, i) => Number(i % c.T < keep(Math.floor(i / c.T)))),
        [c.B, c.T],
        'i32',
        'bench.mask',
      )
    : undefined;
  const fwd = (f?: string) => () => attentionForward(gpu, t.out, t.lse, t.q, t.k, t.v, { path: 'tiled', mask, forward: f });
  const outs = () => gpu.readMany([t.out, t.lse]) as Promise<Float32Array[]>;
  fwd()();
  const ref = await outs();
  const flops = attentionFwdFlops(c);
  // GPU time from timestamps where the device has them (at these sizes the CPU's dispatch cost would hide it).
  const timeF = async (f?: string): Promise<number> => {
    if (!gpu.hasTimestamps) return timeIt(gpu, fwd(f), budgetMs);
    fwd(f)();
    await gpu.sync();
    const n = quick ? 2 : 50;
    // Calls queued ahead of the profiled ones keep the GPU busy, so its clocks are up when they run.
    for (let i = 0; i < (quick ? 0 : 100); i++) fwd(f)();
    gpu.startProfile();
    for (let i = 0; i < n; i++) fwd(f)();
    const times = await gpu.stopProfile();
    return times.reduce((a, x) => a + x.ms, 0) / n;
  };
  const nowMs = await timeF();
  const now = forwardChoice(c.T, c.HS);
  console.log(
    `${shape}  fwd  now ${now ? forwardName(now) : 'tiles'}  ${nowMs.toFixed(4)} ms ${num(flops / nowMs / 1e6)} GFLOP/s (causal FLOPs of the unpadded shape)`,
  );
  for (const f of forwards) {
    const why = forwardUnfit(c.HS, lanes, parseForward(f), L);
    if (why) {
      if (!skipped.some((x) => x.variant === f)) skipped.push({ variant: f, why });
      continue;
    }
    const ms = await timeF(f);
    const got = await outs();
    const err = relErr(got, ref);
    const row: FRow = { shape, T: c.T, variant: f, ms, gflops: flops / ms / 1e6, vsNow: nowMs / ms, err, bad: !(err < 1e-4) };
    frows.push(row);
    console.log(
      `${shape}  fwd  ${f.padEnd(12)} ${ms.toFixed(4).padStart(9)} ms ${num(row.gflops).padStart(7)} GFLOP/s  x${row.vsNow.toFixed(2)} now  err ${err.toExponential(1)}${row.bad ? '  BAD' : ''}`,
    );
  }
  gpu.release(t.q, t.k, t.v, t.dout, t.out, t.lse, t.dq, t.dk, t.dv, mask);
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
  console.log(
    `| ${shape} | ${num(v1.gflops)} | ${now ? `${now.variant} ${num(now.gflops)}` : ''} | ${b.variant} | ${num(b.gflops)} | ${(v1.ms / b.ms).toFixed(2)} | ${torch ? num(torch) : ''} | ${vsTorch} |`,
  );
}
// The table rows: the best variant of each measured T (HS = 64 shapes), each serving up to halfway to the next T.
const ts = [...new Set(shapes.filter((c) => c.HS === 64 && best[shapeStr(c)]).map((c) => c.T))].sort((a, b) => a - b);
const choice = ts.map((T, i) => {
  const atT = shapes.filter((c) => c.T === T && best[shapeStr(c)]).map((c) => best[shapeStr(c)]);
  const pick = atT.sort((a, b) => b.vsV1 - a.vsV1)[0];
  return { maxT: i + 1 < ts.length ? Math.floor((T + ts[i + 1]) / 2) : Infinity, variant: pick.variant };
});
console.log(`\nBACKWARD_CHOICE now: ${BACKWARD_CHOICE.map((r) => `{ maxT: ${r.maxT}, variant: '${r.variant}' }`).join(', ')}`);
console.log('BACKWARD_CHOICE from this run (kernels/attention/variants.ts):');
for (const r of choice) console.log(`  { maxT: ${r.maxT === Infinity ? 'Infinity' : r.maxT}, variant: '${r.variant}' },`);
if (frows.length) {
  console.log(`\nattention forward (GPU time; GFLOP/s of the unpadded causal shape; torch: SDPA on the unpadded shape)`);
  console.log(`| shape | now ms | best | best ms | x now | torch ms |\n|${'---|'.repeat(6)}`);
  for (const { name: shape } of fshapes) {
    const rs = frows.filter((r) => r.shape === shape && !r.bad).sort((a, b) => a.ms - b.ms);
    if (!rs.length) continue;
    const torch = torchRow(shape.replace(/:pad$/, ''));
    console.log(
      `| ${shape} | ${(rs[0].ms * rs[0].vsNow).toFixed(4)} | ${rs[0].variant} | ${rs[0].ms.toFixed(4)} | ${rs[0].vsNow.toFixed(2)} | ${torch ? torch.ms.toFixed(4) : ''} |`,
    );
  }
  // A row per measured T (HS = 64): the variant with the best geometric mean speed over that T's shapes.
  const fts = [...new Set(frows.filter((r) => !r.bad).map((r) => r.T))].sort((a, b) => a - b);
  const fchoice = fts.map((T, i) => {
    const score = new Map<string, number[]>();
    for (const r of frows.filter((x) => x.T === T)) score.set(r.variant, [...(score.get(r.variant) ?? []), r.bad ? 0 : r.vsNow]);
    const n = Math.max(...[...score.values()].map((x) => x.length));
    const gm = (xs: number[]) => (xs.length < n || xs.includes(0) ? 0 : Math.exp(xs.reduce((a, x) => a + Math.log(x), 0) / xs.length));
    const pick = [...score.entries()].sort((a, b) => gm(b[1]) - gm(a[1]))[0][0];
    return { maxT: i + 1 < fts.length ? Math.floor((T + fts[i + 1]) / 2) : Infinity, variant: pick };
  });
  console.log(`\nFORWARD_CHOICE now: ${FORWARD_CHOICE.map((r) => `{ maxT: ${r.maxT}, variant: '${r.variant}' }`).join(', ')}`);
  console.log('FORWARD_CHOICE from this run (kernels/attention/variants.ts):');
  for (const r of fchoice) console.log(`  { maxT: ${r.maxT === Infinity ? 'Infinity' : r.maxT}, variant: '${r.variant}' },`);
}
if (arg('out')) {
  writeFileSync(
    arg('out')!,
    JSON.stringify(
      {
        adapter: gpu.adapter,
        limits: {
          maxComputeWorkgroupStorageSize: L.maxComputeWorkgroupStorageSize,
          maxComputeInvocationsPerWorkgroup: L.maxComputeInvocationsPerWorkgroup,
          maxStorageBuffersPerShaderStage: L.maxStorageBuffersPerShaderStage,
        },
        rows,
        best,
        kernels,
        frows,
        skipped,
        choice: choice.map((r) => ({ ...r, maxT: r.maxT === Infinity ? 'Infinity' : r.maxT })),
      },
      null,
      1,
    ),
  );
}
process.exit(0);
