import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { expectedWeights, parseModelConfig } from '../src/model/config.ts';
import { parseSafetensors } from '../src/model/safetensors.ts';
import { loadTokenizer } from '../src/model/tokenizer.ts';
import { benchModelFolder, paddedTokenizer } from './lab-server.ts';
import { BENCH_MODELS } from './random-model.ts';

const BUILTIN = 'public/models/marft-tiny';

describe('benchModelFolder: a random model the lab can download from the local Hub', () => {
  it('the shape of bench:iteration, every weight in BF16, and the built-in tokenizer files', () => {
    const files = benchModelFolder('tiny', BUILTIN);
    const mc = parseModelConfig(JSON.parse(new TextDecoder().decode(files['config.json'])));
    expect(mc.vocabSize).toBe(BENCH_MODELS.tiny.vocab_size);
    expect(mc.numLayers).toBe(BENCH_MODELS.tiny.num_hidden_layers);
    const st = parseSafetensors(files['model.safetensors'], 'model.safetensors');
    for (const w of expectedWeights(mc)) {
      expect(st.tensors.get(w.name)?.shape).toEqual(w.shape);
      expect(st.tensors.get(w.name)?.dtype).toBe('BF16');
    }
    expect(Object.keys(files)).toEqual(expect.arrayContaining(['tokenizer.json', 'tokenizer_config.json']));
  });

  it("the tokenizer padded to SmolLM2-135M's vocabulary decodes every id and encodes as before", () => {
    const json = JSON.parse(readFileSync(`${BUILTIN}/tokenizer.json`, 'utf8'));
    const config = readFileSync(`${BUILTIN}/tokenizer_config.json`, 'utf8');
    const vocab = BENCH_MODELS['smollm2-135m'].vocab_size as number;
    const base = loadTokenizer(json, config);
    const padded = loadTokenizer(paddedTokenizer(json, vocab) as object, config);
    expect(padded.vocabSize).toBe(vocab);
    expect(padded.encode('12 + 30 = 42')).toEqual(base.encode('12 + 30 = 42'));
    // a random model's sample (the inert ids and the real ones, here every 7th id) decodes to one character an
    // inert id, and the next agent's prompt re-encodes it as the same ids
    const inert = Array.from({ length: 300 }, (_, i) => base.vocabSize + ((i * 7919) % (vocab - base.vocabSize)));
    const text = padded.decode(inert);
    expect([...text]).toHaveLength(inert.length);
    expect(padded.encode(text)).toEqual(inert);
    const mixed = inert.map((id, i) => (i % 7 === 3 ? base.encode('+')[0] : id));
    expect(padded.encode(padded.decode(mixed))).toEqual(mixed);
  });
});
