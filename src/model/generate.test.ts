// Generation: greedy decoding with the KV cache equals the argmax of a full forward at every step (and
// transformers' own greedy generate on the parity fixture); sampling is reproducible from its seed and
// honours stop tokens and per-sequence limits; onTokens streams exactly the final tokens.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { expectClose, testGpu } from '../../kernels/testing.ts';
import type { Recording } from '../gpu/recording.ts';
import type { ForwardState } from './batch.ts';
import { Decoder } from './decoder.ts';
import { createKvCache, releaseKvCache } from './kv-cache.ts';
import { generate } from './generate.ts';
import { createLoraSet } from './lora-set.ts';
import { loadDecoder } from './load.ts';
import { nodeModelFiles } from './node-files.ts';
import { parseSafetensors, tensorToFloat32 } from './safetensors.ts';
import { tinyConfig, tinyWeights } from './testing.ts';
import { releaseWeights, uploadWeights } from './weights.ts';

const argmax = (a: Float32Array, off: number, n: number): number => {
  let best = 0;
  for (let i = 1; i < n; i++) if (a[off + i] > a[off + best]) best = i;
  return best;
};

describe('recorded decode steps', () => {
  for (const fused of [false, true])
    it(`a recorded decode step replays as the next ones with the logits of step-by-step forwards (${fused ? 'fused' : 'unfused'} path)`, async () => {
      const gpu = await testGpu();
      const config = tinyConfig();
      const dec = new Decoder(
        gpu,
        config,
        uploadWeights(gpu, config, (n) => tinyWeights(config, 3, 0.8).get(n)),
        { fused },
      );
      const lora = createLoraSet(gpu, config, { r: 2, alpha: 4, targets: ['q_proj', 'v_proj', 'down_proj'], slots: 2 }, 5);
      for (const layer of lora.layers)
        for (const p of Object.values(layer))
          gpu.write(
            p.B,
            Float32Array.from({ length: p.B.shape.reduce((a, b) => a * b, 1) }, (_, i) => Math.cos(i) * 0.5),
          );
      const B = 3;
      const Tp = 2;
      const slots = Int32Array.from([1, -1, 0]);
      const prompt = Int32Array.from([3, 9, 4, 4, 7, 1]);
      const steps = [
        [5, 2, 8],
        [1, 1, 6],
        [9, 3, 3],
      ];
      const unpin = dec.pinAdapters(lora);
      /** The logits of each decode step, by forwards or (record) by a recording of the first and replays. */
      const run = async (record: boolean): Promise<Float32Array[]> => {
        const cache = createKvCache(gpu, config, B, Tp + steps.length, new Int32Array(B * Tp).fill(1), Tp);
        dec.release(dec.forward({ B, T: Tp, ids: prompt, adapters: lora, slots }, { cache, logits: 'last' }));
        const [ids, pos, slotsGpu, len] = [
          gpu.tensor([B], 'i32', 'ids'),
          gpu.tensor([B], 'i32', 'pos'),
          gpu.upload(slots, [B], 'i32', 'slots'),
          gpu.tensor([1], 'i32', 'len'),
        ];
        if (record) cache.lengthGpu = len;
        let rec: Recording | null = null;
        let st: ForwardState | null = null;
        const out: Float32Array[] = [];
        for (const [i, step] of steps.entries()) {
          gpu.write(ids, Int32Array.from(step));
          gpu.write(pos, new Int32Array(B).fill(Tp + i));
          gpu.write(len, Int32Array.of(cache.length));
          if (rec) {
            gpu.replay(rec);
            cache.length += 1;
          } else {
            if (st) dec.release(st);
            if (record) gpu.startRecording();
            st = dec.forward(
              { B, T: 1, ids: new Int32Array(0), idsGpu: ids, posGpu: pos, slotsGpu, adapters: lora, slots },
              { cache, logits: 'last' },
            );
            if (record) rec = gpu.stopRecording();
          }
          out.push(await gpu.readF32(st!.logits!));
        }
        rec?.dispose();
        dec.release(st!);
        releaseKvCache(gpu, cache);
        gpu.release(ids, pos, slotsGpu, len);
        return out;
      };
      const want = await run(false);
      const got = await run(true);
      unpin();
      for (let i = 0; i < steps.length; i++) expectClose(`step ${i} logits`, got[i], want[i], { atol: 1e-5, rtol: 1e-4 });
      expect(Math.max(...want[2].map((v, i) => Math.abs(v - want[1][i])))).toBeGreaterThan(1e-3); // the steps differ
      releaseWeights(gpu, dec.weights);
    });
});

describe('generate', () => {
  for (const fused of [false, true])
    it(`greedy with the KV cache equals the argmax of a full forward at every step (mixed adapters, left padding${fused ? ', fused path' : ''})`, async () => {
      const gpu = await testGpu();
      const config = tinyConfig();
      const dec = new Decoder(
        gpu,
        config,
        uploadWeights(gpu, config, (n) => tinyWeights(config, 3, 0.8).get(n)),
        { fused },
      );
      const lora = createLoraSet(gpu, config, { r: 2, alpha: 4, targets: ['q_proj', 'v_proj', 'down_proj'], slots: 2 }, 5);
      for (const layer of lora.layers)
        for (const p of Object.values(layer))
          gpu.write(
            p.B,
            Float32Array.from({ length: p.B.shape.reduce((a, b) => a * b, 1) }, (_, i) => Math.sin(i) * 0.5),
          );
      const prompts = [[5, 9, 2, 17], [3], [8, 8]];
      const slots = [0, -1, 1];
      // a decode step writes nothing to the queue: one submit per readback, beside the uploads
      const queue = gpu.device.queue;
      const submit = queue.submit.bind(queue);
      let submits = 0;
      queue.submit = (cbs) => {
        submits++;
        submit(cbs);
      };
      // the fused path records its first decode step and replays it as the later ones, with nothing beside it:
      // no dispatch (whose uniforms would carry the step) and no copy
      const replay = gpu.replay.bind(gpu);
      const [run, copy] = [gpu.run.bind(gpu), gpu.copy.bind(gpu)];
      let replays = 0;
      let besideReplays = 0;
      gpu.replay = (r) => {
        replays++;
        replay(r);
      };
      gpu.run = (d) => {
        if (replays) besideReplays++;
        run(d);
      };
      gpu.copy = (...a) => {
        if (replays) besideReplays++;
        copy(...a);
      };
      const gen = await generate(dec, prompts, {
        maxNewTokens: 6,
        sampling: { temperature: 0 },
        adapters: lora,
        slots,
        seed: 1,
        syncEvery: 4,
      }).finally(() => {
        queue.submit = submit;
        Object.assign(gpu, { replay, run, copy });
      });
      expect(replays).toBe(fused ? 4 : 0); // steps 2-5: step 0 samples the prefill's logits, step 1 (forward, sampling, bookkeeping) is recorded
      expect(besideReplays).toBe(0);
      expect(submits).toBeLessThanOrEqual(
        2 /* readbacks: tokens and log-probs together, twice */ + 10 /* uploads of the prompt, settings, positions, slots */,
      );
      for (let b = 0; b < prompts.length; b++) {
        expect(gen.tokens[b]).toHaveLength(6);
        const seq = [...prompts[b], ...gen.tokens[b]];
        const T = seq.length - 1;
        const st = dec.forward({ B: 1, T, ids: Int32Array.from(seq.slice(0, T)), adapters: lora, slots: Int32Array.of(slots[b]) });
        const logits = await gpu.readF32(st.logits!);
        dec.release(st);
        for (let i = 0; i < 6; i++) {
          const t = prompts[b].length - 1 + i;
          expect(gen.tokens[b][i], `sequence ${b} step ${i}`).toBe(argmax(logits, t * config.vocabSize, config.vocabSize));
        }
        expect(gen.logprobs[b].every((x) => x === 0)).toBe(true);
      }
      releaseWeights(gpu, dec.weights);
    });

  for (const [fused, form] of [[false], [true], [true, 'gemv']] as const)
    it(`matches transformers greedy generate on the llama parity fixture${fused ? ` (fused path${form ? `, ${form} form` : ''})` : ''}`, async () => {
      const gpu = await testGpu();
      const root = new URL('../../fixtures/parity/llama-tiny', import.meta.url).pathname;
      const { decoder } = await loadDecoder(gpu, await nodeModelFiles(root), { fused, fusedForm: form });
      const ref = parseSafetensors(new Uint8Array(readFileSync(`${root}/reference.safetensors`)), 'reference.safetensors');
      const ids = Array.from(tensorToFloat32(ref.tensors.get('input_ids')!));
      const greedy = Array.from(tensorToFloat32(ref.tensors.get('greedy')!));
      const prompt = ids.slice(0, 11); // the first sequence (no padding)
      const gen = await generate(decoder, [prompt], { maxNewTokens: 8, sampling: { temperature: 0 }, seed: 0 });
      expect(gen.tokens[0]).toEqual(greedy.slice(11));
      releaseWeights(gpu, decoder.weights);
    });

  it('sampling is reproducible, stops at stop tokens, and respects per-sequence limits', async () => {
    const gpu = await testGpu();
    const config = tinyConfig();
    const dec = new Decoder(
      gpu,
      config,
      uploadWeights(gpu, config, (n) => tinyWeights(config, 4, 0.3).get(n)),
    );
    const prompts = [[1, 2, 3], [4, 5], [6]];
    const opts = {
      maxNewTokens: [10, 3, 10],
      sampling: [{ temperature: 1 }, { temperature: 0.7, topK: 5 }, { temperature: 1, topP: 0.9 }],
      seed: 42,
      streams: [0, 1, 2],
    };
    const a = await generate(dec, prompts, opts);
    const b = await generate(dec, prompts, opts);
    expect(a.tokens).toEqual(b.tokens);
    expect(a.tokens[1]).toHaveLength(3);
    expect(a.finish[1]).toBe('length');
    expect(a.logprobs.flat().every((x) => x <= 0 && Number.isFinite(x))).toBe(true);
    // the same stream gives the same tokens in another batch layout
    const solo = await generate(dec, [prompts[2]], { ...opts, maxNewTokens: 10, sampling: opts.sampling[2], streams: [2] });
    expect(solo.tokens[0]).toEqual(a.tokens[2]);
    // stop at the first sampled token of sequence 0
    const stopTok = a.tokens[0][2];
    const c = await generate(dec, prompts, { ...opts, stopTokens: [stopTok] });
    const firstStop = a.tokens[0].indexOf(stopTok);
    expect(c.tokens[0]).toEqual(a.tokens[0].slice(0, firstStop + 1));
    expect(c.finish[0]).toBe('stop_token');
    // a batch over the prefill cap runs as sub-batches (here 2 + 1 prompts) with the same results, progress over all
    const steps: Array<[number, number]> = [];
    const split = await generate(dec, prompts, { ...opts, maxPrefillTokens: 7, onProgress: (d, m) => steps.push([d, m]) });
    expect(split).toEqual(a);
    expect(steps.every(([, m]) => m === steps[0][1])).toBe(true);
    expect(steps[steps.length - 1][0]).toBe(steps[0][1]);
    const greedy = { ...opts, sampling: { temperature: 0 }, streams: undefined };
    expect(await generate(dec, prompts, { ...greedy, maxPrefillTokens: 3 })).toEqual(await generate(dec, prompts, greedy));
    // stop strings (checked on the CPU): the text is cut before the string; a stop token that completes one ends as a stop token
    const decode = (ids: number[]) => ids.map((i) => String.fromCharCode(97 + (i % 26))).join('');
    const word = decode(a.tokens[0].slice(3, 5));
    const at = decode(a.tokens[0]).indexOf(word);
    const d = await generate(dec, prompts, { ...opts, stopStrings: [word], decode });
    expect(d.finish[0]).toBe('stop_string');
    expect(d.tokens[0]).toEqual(a.tokens[0].slice(0, at + 2));
    expect(d.text![0]).toBe(decode(a.tokens[0]).slice(0, at));
    const e = await generate(dec, prompts, { ...opts, stopStrings: [word], stopTokens: [a.tokens[0][at + 1]], decode });
    expect(e.finish[0]).toBe('stop_token');
    expect(e.tokens[0]).toEqual(a.tokens[0].slice(0, a.tokens[0].indexOf(a.tokens[0][at + 1]) + 1));
    releaseWeights(gpu, dec.weights);
  });

  it("onTokens streams each sequence's tokens at every readback: in order, their concatenation the final tokens", async () => {
    const gpu = await testGpu();
    const config = tinyConfig();
    const dec = new Decoder(
      gpu,
      config,
      uploadWeights(gpu, config, (n) => tinyWeights(config, 4, 0.3).get(n)),
    );
    const prompts = [[1, 2, 3], [4, 5], [6]];
    const opts = { maxNewTokens: [9, 3, 9], sampling: { temperature: 1 }, seed: 7, streams: [0, 1, 2] };
    const plain = await generate(dec, prompts, opts);
    // a stop token early in sequence 0: it is streamed (it ends the sequence's tokens), nothing after it
    const stopTokens = [plain.tokens[0][1]];
    const ref = await generate(dec, prompts, { ...opts, stopTokens });
    for (const split of [undefined, 4]) {
      // one batch, and sub-batches of one prompt each (4 padded tokens fit one 3-token prompt)
      const calls: number[][][] = [];
      const gen = await generate(dec, prompts, {
        ...opts,
        stopTokens,
        syncEvery: 2,
        maxPrefillTokens: split,
        onTokens: (fresh) => calls.push(fresh),
      });
      expect(gen).toEqual(ref); // streaming changes nothing
      expect(calls.every((c) => c.length === 3)).toBe(true);
      for (let b = 0; b < 3; b++)
        expect(
          calls.flatMap((c) => c[b]),
          `sequence ${b}, split ${split}`,
        ).toEqual(ref.tokens[b]);
      // every 2 steps: a readback never brings more than 2 tokens of a sequence, and there are several
      expect(calls.every((c) => c.every((t) => t.length <= 2))).toBe(true);
      expect(calls.length).toBeGreaterThanOrEqual(split ? 4 + 2 : 5);
    }
    expect(ref.finish[0]).toBe('stop_token');
    expect(ref.tokens[0]).toEqual(plain.tokens[0].slice(0, plain.tokens[0].indexOf(stopTokens[0]) + 1));
    releaseWeights(gpu, dec.weights);
  });
});
