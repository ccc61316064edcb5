// scratch: wall time per call against reps and submit interval, for one short matmul
import { acquireNodeGpu, ensureVulkanEnv } from '../src/gpu/node.ts';
import { matmul } from '../kernels/matmul/matmul.ts';
await ensureVulkanEnv();
const gpu = await acquireNodeGpu({});
const [M, N, K] = (process.argv[2] ?? '4096x576x576').split('x').map(Number);
const v = (process.argv[3] ?? 'mid:w') as 'mid:w';
const a = gpu.zeros([M, K], 'f32', 'a'); const b = gpu.zeros([K, N], 'f32', 'b'); const c = gpu.tensor([M, N], 'f32', 'c');
const call = () => matmul(gpu, c, a, b, { variant: v });
for (let i = 0; i < 50; i++) call();
await gpu.sync();
for (const every of [8, 32, 256]) {
  for (const reps of [16, 64, 200, 800]) {
    const wall: number[] = []; const rec: number[] = [];
    for (let r = 0; r < 5; r++) {
      const t0 = performance.now();
      for (let i = 0; i < reps; i++) { call(); if (i % every === every - 1) gpu.submit(); }
      const t1 = performance.now();
      await gpu.sync();
      wall.push((performance.now() - t0) / reps); rec.push((t1 - t0) / reps);
    }
    wall.sort((x, y) => x - y); rec.sort((x, y) => x - y);
    console.log(`submit every ${every}, reps ${reps}: wall ${wall[2].toFixed(4)} ms/call (min ${wall[0].toFixed(4)}), record ${rec[2].toFixed(4)} ms/call`);
  }
}
gpu.startProfile(); for (let i = 0; i < 200; i++) call();
console.log('gpu ms/call', ((await gpu.stopProfile()).reduce((s, k) => s + k.ms, 0) / 200).toFixed(4));
process.exit(0);
