// Bad model files: each gets an error naming the file and the problem, and nothing stays half-loaded
// on the GPU (the pool's bytes in use are back where they were).

import { describe, expect, it } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import { parseModelConfig } from './config.ts';
import { TINY_QWEN2_CONFIG, tinyModelFolder } from './file-fixtures.ts';
import { memoryFiles } from './folder.ts';
import { loadDecoder } from './load.ts';
import { tinyConfig, tinyWeights } from './testing.ts';
import { uploadWeights } from './weights.ts';

describe('loading a model', () => {
  it('a good folder loads; bad folders fail clearly and leave nothing on the GPU', async () => {
    const gpu = await testGpu();
    const good = tinyModelFolder('BF16');
    const { decoder } = await loadDecoder(gpu, memoryFiles('tiny', good));
    expect(decoder.weights.dtype).toBe('bf16');

    const cases: Array<[string, Record<string, Uint8Array | string>, RegExp]> = [
      [
        'truncated weights',
        { ...good, 'model.safetensors': (good['model.safetensors'] as Uint8Array).subarray(0, 5000) },
        /tiny\/model\.safetensors: .*(truncated|shorter|past the end)/i,
      ],
      [
        'unsupported architecture',
        { ...good, 'config.json': JSON.stringify({ ...TINY_QWEN2_CONFIG, model_type: 'gpt2', architectures: ['GPT2LMHeadModel'] }) },
        /config\.json: "model_type" is "gpt2"/,
      ],
      [
        'shape mismatch',
        { ...good, 'config.json': JSON.stringify({ ...TINY_QWEN2_CONFIG, hidden_size: 32 }) },
        /has shape \[268, 16\], config\.json implies \[268, 32\]/,
      ],
      ['no weights', { 'config.json': good['config.json'] }, /neither model\.safetensors nor model\.safetensors\.index\.json/],
    ];
    for (const [name, files, msg] of cases) {
      const before = gpu.pool.stats.bytesInUse;
      await expect(loadDecoder(gpu, memoryFiles('tiny', files)), name).rejects.toThrow(msg);
      expect(gpu.pool.stats.bytesInUse, name).toBe(before);
    }
  });

  it('a tensor missing half-way through the upload releases what was uploaded', async () => {
    const gpu = await testGpu();
    const config = tinyConfig();
    const w = tinyWeights(config, 1);
    w.delete('model.layers.1.mlp.down_proj.weight');
    const before = gpu.pool.stats.bytesInUse;
    expect(() => uploadWeights(gpu, config, (n) => w.get(n))).toThrow(/missing tensor "model\.layers\.1\.mlp\.down_proj\.weight"/);
    expect(gpu.pool.stats.bytesInUse).toBe(before);
  });

  it('a model too large for the device is refused before anything is uploaded', async () => {
    const gpu = await testGpu();
    // an MLP matrix over one binding: only the embedding and the LM head are split
    const wide = parseModelConfig({
      ...TINY_QWEN2_CONFIG,
      hidden_size: 1024,
      intermediate_size: 1 << 20,
      num_attention_heads: 8,
      num_key_value_heads: 8,
    });
    const fake = () => ({ dtype: 'F32' as const, shape: [1024], data: new Uint8Array(0) });
    const before = gpu.pool.stats.bytesInUse;
    expect(() => uploadWeights(gpu, wide, fake)).toThrow(
      /"model\.layers\.0\.mlp\.gate_proj\.weight" \(1048576 x 1024, f32\) needs 4294967296 bytes, over this device's buffer binding limit of \d+; only the embedding and the LM head are split/,
    );
    // an embedding over one binding is split only where the weights are frozen
    const vocab = parseModelConfig({
      ...TINY_QWEN2_CONFIG,
      vocab_size: 1 << 22,
      hidden_size: 1024,
      num_attention_heads: 8,
      num_key_value_heads: 8,
    });
    expect(() => uploadWeights(gpu, vocab, fake, { trainable: true })).toThrow(
      /"model\.embed_tokens\.weight" \(4194304 x 1024, f32\) needs 17179869184 bytes, over this device's buffer binding limit of \d+; full-parameter training needs it whole/,
    );
    expect(gpu.pool.stats.bytesInUse).toBe(before);
  });
});
