// The cost of one dispatch through the engine's own path (Gpu.run: pipeline and bind-group caches, one open
// compute pass, submit at sync), shared by bench:dispatch's Node run and its browser page so both measure
// the same code. The program is the smallest there is: one invocation (@workgroup_size(1)) adding 1 to a
// counter, with a uniform and a storage binding like every kernel, so what is timed is the dispatch and
// not the work (on SwiftShader every idle lane of a wider workgroup would cost ~0.35 µs).
//   encode:     N dispatches recorded on the JS thread, timed before the submit (ms per dispatch);
//   end to end: the same N dispatches, submit and wait for the GPU (ms per dispatch);
//   round trip: one dispatch, submit and wait (ms), i.e. what a readback-driven loop pays per step.
// Medians over `reps` (round trips: over `roundTrips`, as one is short and its spread large). The counter
// is read back at the end: every recorded dispatch must have run.

import type { AdapterSummary, Gpu } from '../src/gpu/gpu.ts';
import type { Program } from '../src/gpu/program.ts';
import { median } from '../kernels/timing.ts';

const COUNT: Program = {
  key: 'bench/dispatch',
  entryPoint: 'main',
  code: () => `
struct U { step: f32, pad0: u32, pad1: u32, pad2: u32 }
@group(0) @binding(0) var<uniform> u: U;
@group(0) @binding(1) var<storage, read_write> counter: array<f32>;
@compute @workgroup_size(1)
fn main() { counter[0] = counter[0] + u.step; }
`,
};

export interface DispatchCost {
  adapter: AdapterSummary;
  cpuAdapter: boolean;
  dispatchesPerRep: number;
  reps: number;
  roundTrips: number;
  encodeMsPerDispatch: number;
  endToEndMsPerDispatch: number;
  roundTripMs: number;
  /** Each rep's figures, for the spread. */
  samples: { encode: number[]; endToEnd: number[]; roundTrip: number[] };
}

export async function dispatchCost(gpu: Gpu, n = 2000, reps = 5, roundTrips = 20): Promise<DispatchCost> {
  if (![n, reps, roundTrips].every((k) => Number.isInteger(k) && k >= 1))
    throw new Error(`dispatchCost needs positive integer counts, got n=${n} reps=${reps} roundTrips=${roundTrips}`);
  const counter = gpu.zeros([1], 'f32', 'bench.counter');
  const dispatch = () => gpu.run({ program: COUNT, bindings: [counter], uniforms: [{ f32: 1 }, 0, 0, 0], workgroups: [1] });
  dispatch(); // warm-up: the pipeline compiles, the uniform buffer and bind group are cached
  await gpu.sync();
  const samples = { encode: [] as number[], endToEnd: [] as number[], roundTrip: [] as number[] };
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) dispatch();
    const t1 = performance.now();
    await gpu.sync();
    const t2 = performance.now();
    samples.encode.push((t1 - t0) / n);
    samples.endToEnd.push((t2 - t0) / n);
  }
  for (let r = 0; r < roundTrips; r++) {
    const t0 = performance.now();
    dispatch();
    await gpu.sync();
    samples.roundTrip.push(performance.now() - t0);
  }
  const total = (await gpu.readF32(counter))[0];
  gpu.release(counter);
  const expected = 1 + n * reps + roundTrips;
  if (total !== expected)
    throw new Error(`bench:dispatch: the counter reads ${total} after ${expected} dispatches: some dispatches did not run`);
  return {
    adapter: gpu.adapter,
    cpuAdapter: gpu.cpu,
    dispatchesPerRep: n,
    reps,
    roundTrips,
    encodeMsPerDispatch: median(samples.encode),
    endToEndMsPerDispatch: median(samples.endToEnd),
    roundTripMs: median(samples.roundTrip),
    samples,
  };
}
