// Test helpers for src/marft: a tiny random model with the byte-level test tokenizer, a train state and a
// trainer for the tiny 2-agent run config (src/config/testing.ts).

import type { Gpu } from '../gpu/gpu.ts';
import { Decoder } from '../model/decoder.ts';
import { tinyTokenizer } from '../model/file-fixtures.ts';
import { tinyConfig, tinyWeights } from '../model/testing.ts';
import { loadTokenizer } from '../model/tokenizer.ts';
import { uploadWeights } from '../model/weights.ts';
import { tinyRunConfig } from '../config/testing.ts';
import { createTrainState } from './state.ts';
import { Trainer } from './trainer.ts';

export function tinySetup(gpu: Gpu, over: Record<string, unknown> = {}) {
  const tj = tinyTokenizer();
  const tokenizer = loadTokenizer(tj.tokenizerJson, tj.tokenizerConfig);
  const model = tinyConfig({ vocab_size: tokenizer.vocabSize, max_position_embeddings: 256 });
  const decoder = new Decoder(gpu, model, uploadWeights(gpu, model, (n) => tinyWeights(model, 9, 0.4).get(n)));
  const config = tinyRunConfig(over);
  const state = createTrainState(gpu, model, config);
  return { model, decoder, tokenizer, config, state, trainer: new Trainer({ gpu, decoder, tokenizer, state, maxTokens: 512 }) };
}
