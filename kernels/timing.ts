// How the kernel benchmarks time a GPU call, the same way as their PyTorch peers (bench/baselines/kernels.py
// times a loop of asynchronous launches, median of 5 rounds): rounds of streamed calls, submitted every
// STREAM_SUBMIT so the GPU runs while the CPU records, each round sized from batches of calls.

import type { Gpu } from '../src/gpu/gpu.ts';

/**
 * Calls per submit in a timed round: the GPU runs the first calls while the CPU records the next, as
 * PyTorch's asynchronous launches do in its peer's loop. In one submit (the Gpu's default, SUBMIT_EVERY)
 * the wall time of a short kernel would be the recording time plus the GPU time.
 */
export const STREAM_SUBMIT = 8;

/** The most calls in a timed round (the PyTorch peer's cap). */
export const MAX_REPS = 500;

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Records `reps` calls, submitting every STREAM_SUBMIT, and waits for them: wall milliseconds per call. */
export async function streamed(gpu: Gpu, call: () => void, reps: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) {
    call();
    if (i % STREAM_SUBMIT === STREAM_SUBMIT - 1) gpu.submit();
  }
  await gpu.sync();
  return (performance.now() - t0) / reps;
}

/**
 * Calls per round for about `roundMs` of wall time: batches of 1, 2, 4, ... calls until one takes a quarter
 * of that, then scaled. One call's time would be its latency (submit and wait, which can take milliseconds
 * more than the kernel): a short kernel would then get a few calls a round, each round paying that latency.
 */
export async function calibrate(gpu: Gpu, call: () => void, roundMs: number): Promise<number> {
  for (let n = 1; ; n *= 2) {
    const ms = n * (await streamed(gpu, call, n));
    if (ms >= roundMs / 4 || n >= MAX_REPS) return Math.min(MAX_REPS, Math.max(3, Math.ceil((n * roundMs) / Math.max(ms, 1e-3))));
  }
}

/** Milliseconds a call: the median of `rounds` streamed rounds of about `roundMs` each, after a warm-up call. */
export async function timeCalls(gpu: Gpu, call: () => void, roundMs: number, rounds = 5): Promise<number> {
  call();
  await gpu.sync(); // warm-up: pipelines compiled, buffers touched
  const reps = await calibrate(gpu, call, roundMs);
  const ms: number[] = [];
  for (let r = 0; r < rounds; r++) ms.push(await streamed(gpu, call, reps));
  return median(ms);
}
