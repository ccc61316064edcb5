// The training heads against the float64 references of their kernels: token log-probs and entropy (padding
// rows 0), the backward written over the logits, and a row gather.

import { describe, expect, it } from 'vitest';
import { logprobsBackwardRef, logprobsForwardRef } from '../../kernels/logprobs/logprobs.ref.ts';
import { expectClose, randn, testGpu } from '../../kernels/testing.ts';
import { releaseTokenLogprobs, selectRows, tokenLogprobs, tokenLogprobsBackward } from './heads.ts';

describe('heads', () => {
  it('token log-probs and entropy, and their backward over the logits in place', async () => {
    const gpu = await testGpu();
    const [N, V] = [5, 11];
    const logits = Float32Array.from(randn(N * V, 4, 2));
    const targets = Int32Array.of(3, -1, 10, 0, -1);
    const dlogp = Float32Array.from(randn(N, 5));
    const dent = Float32Array.from(randn(N, 6));
    const ref = logprobsForwardRef(logits, targets, N, V);
    for (const withEntropy of [true, false]) {
      const tl = gpu.upload(logits, [N, V], 'f32', 'logits');
      const tt = gpu.upload(targets, [N], 'i32', 'targets');
      const h = tokenLogprobs(gpu, tl, tt, 'test');
      expectClose('logp', await gpu.read(h.logp), ref.logp, { atol: 1e-5, rtol: 1e-5 });
      expectClose('entropy', await gpu.read(h.entropy), ref.entropy, { atol: 1e-5, rtol: 1e-5 });
      expect([(await gpu.readF32(h.logp))[1], (await gpu.readF32(h.entropy))[4]]).toEqual([0, 0]);
      tokenLogprobsBackward(gpu, h, tl, dlogp, withEntropy ? dent : null);
      const want = logprobsBackwardRef(logits, targets, dlogp, withEntropy ? dent : null, N, V);
      expectClose(`dlogits (entropy ${withEntropy})`, await gpu.read(tl), want, { atol: 2e-6, rtol: 1e-4 });
      // the same gradients given as tensors already on the GPU (the policy loss's), which stay the caller's
      const tl2 = gpu.upload(logits, [N, V], 'f32', 'logits');
      const [dl, de] = [gpu.upload(dlogp, [N], 'f32', 'dlogp'), gpu.upload(dent, [N], 'f32', 'dentropy')];
      tokenLogprobsBackward(gpu, h, tl2, dl, withEntropy ? de : null);
      expectClose(`dlogits from tensors (entropy ${withEntropy})`, await gpu.read(tl2), want, { atol: 2e-6, rtol: 1e-4 });
      expect(Array.from(await gpu.readF32(dl))).toEqual(Array.from(dlogp));
      releaseTokenLogprobs(gpu, h);
      gpu.release(tl, tt, tl2, dl, de);
    }
  });

  it('selectRows gathers rows of a (N, C) tensor', async () => {
    const gpu = await testGpu();
    const table = Float32Array.from(randn(6 * 3, 7));
    const t = gpu.upload(table, [6, 3], 'f32', 'table');
    const rows = [4, 0, 4, 2];
    const out = selectRows(gpu, t, rows, 'picked');
    expect(out.shape).toEqual([4, 3]);
    expect(Array.from(await gpu.readF32(out))).toEqual(rows.flatMap((r) => Array.from(table.subarray(r * 3, r * 3 + 3))));
    gpu.release(t, out);
  });
});
