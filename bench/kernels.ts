// `npm run bench:kernels`: GFLOP/s of our matmul and attention kernels for a few shapes, beside
// TensorFlow.js's WebGPU matmul on the same device in the same process, printed as a table.
// On SwiftShader (no GPU) the shapes shrink so the run stays short. Options:
//   --shapes 4096x4096x4096,...   matmul shapes MxNxK     --attn BxTxNHxNKVxHS,...
//   --peer <file.json>            PyTorch figures from bench/baselines/kernels.py, shown as ratios
//   --out <file.json>             writes the rows            --no-tfjs   skips the TF.js peer
// It ends with the run's dispatch, readback and submit counts (the TF.js peer's device is its own).

import { readFileSync, writeFileSync } from 'node:fs';
import { benchAttention } from '../kernels/attention/attention.bench.ts';
import { benchMatmul } from '../kernels/matmul/matmul.bench.ts';
import { acquireNodeGpu, ensureVulkanEnv } from '../src/gpu/node.ts';
import { tfjsMatmulMs } from './tfjs-peer.ts';
import { counts, countsLine } from './counters.ts';

await ensureVulkanEnv();

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const parseDims = (s: string): number[][] =>
  s
    .split(',')
    .filter(Boolean)
    .map((x) => x.split('x').map(Number));

const gpu = await acquireNodeGpu({ log: console.log });
const soft = gpu.adapter.isFallback || gpu.adapter.description.toLowerCase().includes('swiftshader');
const mmShapes = parseDims(
  arg('shapes') ?? (soft ? '128x128x128,256x256x256,64x576x576' : '4096x4096x4096,2048x2048x2048,1024x1024x1024,4096x576x576,8x1536x576'),
);
const attnCases = parseDims(arg('attn') ?? (soft ? '1x64x4x2x64' : '8x512x9x3x64,4x1024x9x3x64,2x2048x16x4x64')).map(
  ([B, T, NH, NKV, HS]) => ({ B, T, NH, NKV, HS }),
);
const peer: { device: string; rows: Array<{ op: string; shape: string; gflops: number; bwd_gflops?: number }> } | null = arg('peer')
  ? JSON.parse(readFileSync(arg('peer')!, 'utf8'))
  : null;
const peerOf = (op: string, shape: string) => peer?.rows.find((r) => r.op === op && r.shape === shape);

const rows: Array<Record<string, string | number>> = [];
// the median of 5 rounds, each a stream of calls (as the PyTorch peer's loop), with GPU time where the device has it
const mm = await benchMatmul(gpu, mmShapes as Array<[number, number, number]>, { rounds: soft ? 1 : 5, timestamps: true });
for (const r of mm) {
  const [M, N, K] = r.shape;
  const shape = `${M}x${N}x${K}`;
  const row: Record<string, string | number> = { op: 'matmul', shape, variant: r.variant, ms: r.ms, gflops: r.gflops };
  if (r.gpuMs !== undefined) row.gpuGflops = (2 * M * N * K) / r.gpuMs / 1e6;
  if (!process.argv.includes('--no-tfjs')) {
    const reps = Math.max(3, Math.min(50, Math.round(2e11 / (2 * M * N * K))));
    const ms = await tfjsMatmulMs(M, N, K, soft ? 2 : reps);
    row.tfjsGflops = (2 * M * N * K) / ms / 1e6;
    row.vsTfjs = r.gflops / row.tfjsGflops;
  }
  const p = peerOf('matmul', shape);
  if (p) {
    row.torchGflops = p.gflops;
    row.vsTorch = r.gflops / p.gflops;
  }
  rows.push(row);
}
for (const r of await benchAttention(gpu, attnCases)) {
  const c = r.case;
  const shape = `${c.B}x${c.T}x${c.NH}x${c.NKV}x${c.HS}`;
  const row: Record<string, string | number> = { op: 'attention', shape, variant: 'causal fwd', ms: r.fwdMs, gflops: r.fwdGflops };
  const p = peerOf('attention', shape);
  if (p) {
    row.torchGflops = p.gflops;
    row.vsTorch = r.fwdGflops / p.gflops;
  }
  rows.push(row);
  const rowB: Record<string, string | number> = { op: 'attention', shape, variant: 'causal bwd', ms: r.bwdMs, gflops: r.bwdGflops };
  if (p?.bwd_gflops) {
    rowB.torchGflops = p.bwd_gflops;
    rowB.vsTorch = r.bwdGflops / p.bwd_gflops;
  }
  rows.push(rowB);
}

const fmt = (v: string | number | undefined): string =>
  v === undefined ? '' : typeof v === 'number' ? (v >= 100 ? v.toFixed(0) : v.toPrecision(3)) : v;
const cols = ['op', 'shape', 'variant', 'ms', 'gflops', 'gpuGflops', 'tfjsGflops', 'vsTfjs', 'torchGflops', 'vsTorch'];
console.log(`\nkernels on ${gpu.adapter.description || gpu.adapter.vendor}${peer ? ` (PyTorch peer: ${peer.device})` : ''}`);
console.log(`| ${cols.join(' | ')} |\n|${cols.map(() => '---').join('|')}|`);
for (const r of rows) console.log(`| ${cols.map((c) => fmt(r[c])).join(' | ')} |`);
console.log(`this run: ${countsLine(counts(gpu))}`);
if (arg('out')) writeFileSync(arg('out')!, JSON.stringify({ adapter: gpu.adapter, rows, counts: counts(gpu) }, null, 1));
process.exit(0);
