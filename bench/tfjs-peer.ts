// TensorFlow.js's WebGPU backend in Node, the in-browser peer users would otherwise pick, timed on the
// same GPU in the same process. It gets its own Dawn instance through a `navigator` made for it.

import { create, globals } from 'webgpu';

type Tf = typeof import('@tensorflow/tfjs-core');

let tfPromise: Promise<Tf> | null = null;

async function loadTf(): Promise<Tf> {
  Object.assign(globalThis, globals);
  const gpu = create(['backend=vulkan']);
  Object.defineProperty(globalThis, 'navigator', { value: { gpu, userAgent: 'node' }, configurable: true });
  const tf = await import('@tensorflow/tfjs-core');
  await import('@tensorflow/tfjs-backend-webgpu');
  await tf.setBackend('webgpu');
  await tf.ready();
  return tf;
}

/** Milliseconds per (M, K) x (K, N) f32 matmul with tf.matMul, after warm-up. */
export async function tfjsMatmulMs(M: number, N: number, K: number, reps: number): Promise<number> {
  tfPromise ??= loadTf();
  const tf = await tfPromise;
  const a = tf.randomUniform([M, K], -1, 1, 'float32', 1);
  const b = tf.randomUniform([K, N], -1, 1, 'float32', 2);
  const run = async (n: number): Promise<void> => {
    let last: import('@tensorflow/tfjs-core').Tensor | null = null;
    for (let i = 0; i < n; i++) {
      last?.dispose();
      last = tf.matMul(a, b);
    }
    await last!.data();
    last!.dispose();
  };
  await run(2);
  const t0 = performance.now();
  await run(reps);
  const ms = (performance.now() - t0) / reps;
  a.dispose();
  b.dispose();
  return ms;
}
