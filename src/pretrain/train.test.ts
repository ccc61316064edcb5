// Pretraining: the loss of a tiny model goes down clearly when it overfits two sequences (loss on the
// completion only), and the Hugging Face folder it writes loads back through loadDecoder with identical
// logits (F32) or close ones (BF16).

import { describe, expect, it } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import { parseModelConfig } from '../model/config.ts';
import { memoryFiles } from '../model/folder.ts';
import { loadDecoder } from '../model/load.ts';
import { lrAt, makeBatch, modelFolderFiles, parameterCount, Pretrainer, pretrain, initWeights, tinyLlamaConfigJson } from './train.ts';
import { buildTinyTokenizer, TINY_IDS } from './tiny-tokenizer.ts';
import { releaseWeights } from '../model/weights.ts';

const dims = {
  vocabSize: 128,
  layers: 2,
  hidden: 16,
  heads: 4,
  kvHeads: 2,
  intermediate: 24,
  maxPositions: 64,
  eosTokenId: TINY_IDS.imEnd,
  padTokenId: TINY_IDS.pad,
};

describe('pretrain', () => {
  it('schedules the lr with warmup and cosine decay', () => {
    expect(lrAt(0, 100, 1, 10)).toBeCloseTo(0.1);
    expect(lrAt(9, 100, 1, 10)).toBeCloseTo(1);
    expect(lrAt(99, 100, 1, 10, 0.1)).toBeCloseTo(0.1, 2);
    expect(lrAt(55, 100, 1, 10, 0)).toBeCloseTo(0.5, 1);
  });

  it('overfits two sequences, then saves a folder that loads back with identical logits', async () => {
    const gpu = await testGpu();
    const configJson = tinyLlamaConfigJson(dims);
    const config = parseModelConfig(configJson);
    expect(parameterCount(config)).toBe(128 * 16 + 2 * (2 * 16 + 16 * 16 + 2 * 8 * 16 + 16 * 16 + 3 * 16 * 24) + 16);
    expect(initWeights(config, 3)).toEqual(initWeights(config, 3));
    const examples = [
      { ids: [10, 11, 12, 13, 40, 41, 42, 43, 44, 45, 46, TINY_IDS.imEnd], promptLen: 4 },
      { ids: [20, 21, 22, 50, 51, 52, 53, 54, TINY_IDS.imEnd], promptLen: 3 },
    ];
    const batch = makeBatch(examples, TINY_IDS.pad, 64);
    expect(batch.T).toBe(16);
    expect(batch.count).toBe(8 + 6);
    const trainer = new Pretrainer(gpu, config, initWeights(config, 1));
    const logs: number[] = [];
    const res = await pretrain(trainer, () => examples, {
      steps: 20,
      seqLen: 64,
      lr: 3e-2,
      warmup: 2,
      roundT: 16,
      weightDecay: 0,
      padId: TINY_IDS.pad,
      logEvery: 5,
      onLog: (p) => logs.push(p.loss),
    });
    expect(res.losses).toHaveLength(20);
    expect(res.losses[0]).toBeGreaterThan(4); // ~ln 128 at init
    expect(res.losses[19]).toBeLessThan(0.25 * res.losses[0]);
    expect(logs).toHaveLength(4);
    expect(logs[3]).toBeLessThan(logs[0]);

    const tokFiles = buildTinyTokenizer(['Compute 2 + 3.', 'The answer is \\boxed{5}.'], { vocabSize: 110 });
    const input = { config: configJson, tokenizerJson: tokFiles.tokenizerJson, tokenizerConfig: tokFiles.tokenizerConfig };
    const files = await modelFolderFiles(gpu, trainer.decoder.weights, input);
    expect(Object.keys(files).sort()).toEqual([
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    expect(JSON.parse(files['config.json'] as string)).toMatchObject({
      model_type: 'llama',
      architectures: ['LlamaForCausalLM'],
      tie_word_embeddings: true,
      torch_dtype: 'float32',
    });
    const { decoder, model } = await loadDecoder(gpu, memoryFiles('tiny-lamas', files));
    expect(model.tokenizer!.eosIds).toEqual([TINY_IDS.imEnd]);
    expect(model.tokenizer!.decode(model.tokenizer!.encode('Compute 2 + 3.'))).toBe('Compute 2 + 3.');
    const ids = Int32Array.from(examples[0].ids);
    const fwd = async (d: typeof decoder): Promise<Float32Array> => {
      const st = d.forward({ B: 1, T: ids.length, ids });
      const out = await gpu.readF32(st.logits!);
      d.release(st);
      return out;
    };
    const want = await fwd(trainer.decoder);
    expect(await fwd(decoder)).toEqual(want);
    releaseWeights(gpu, decoder.weights);

    const bf = await loadDecoder(
      gpu,
      memoryFiles('tiny-bf16', await modelFolderFiles(gpu, trainer.decoder.weights, { ...input, dtype: 'BF16' })),
    );
    expect(bf.decoder.weights.dtype).toBe('bf16');
    const got = await fwd(bf.decoder);
    let worst = 0;
    for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
    expect(worst).toBeLessThan(0.1);
    releaseWeights(gpu, bf.decoder.weights);
    trainer.release();
  });
});
