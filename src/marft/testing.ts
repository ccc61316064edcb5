// Test helpers for src/marft: a tiny random model with the byte-level test tokenizer, a 2-agent run
// config with short prompts and a few tokens per action, a train state and a trainer.

import type { Gpu } from '../gpu/gpu.ts';
import { Decoder } from '../model/decoder.ts';
import { tinyTokenizer } from '../model/file-fixtures.ts';
import { tinyConfig, tinyWeights } from '../model/testing.ts';
import { loadTokenizer } from '../model/tokenizer.ts';
import { uploadWeights } from '../model/weights.ts';
import { parseRunConfig } from '../config/run-config.ts';
import { createTrainState } from './state.ts';
import { Trainer } from './trainer.ts';

export function tinyRunConfig(over: Record<string, unknown> = {}) {
  return parseRunConfig({
    seed: 3,
    graph: {
      agents: [
        { role: 'planner', systemPrompt: 'Plan.', maxNewTokens: 3 },
        { role: 'solver', systemPrompt: 'Solve.', withAnswer: true, maxNewTokens: 4 },
      ],
      edges: [{ from: 'planner', to: 'solver' }],
    },
    env: { name: 'arithmetic', options: { difficulty: 1 } },
    rollout: { episodes: 2, horizon: 2, groupSize: 2 },
    critic: { hidden: [8] },
    lora: { r: 2, alpha: 4 },
    ppo: { lr: 1e-2, criticLr: 1e-2, targetKl: null, entropyCoef: 0.01 },
    ...over,
  });
}

export function tinySetup(gpu: Gpu, over: Record<string, unknown> = {}) {
  const tj = tinyTokenizer();
  const tokenizer = loadTokenizer(tj.tokenizerJson, tj.tokenizerConfig);
  const model = tinyConfig({ vocab_size: tokenizer.vocabSize, max_position_embeddings: 256 });
  const decoder = new Decoder(gpu, model, uploadWeights(gpu, model, (n) => tinyWeights(model, 9, 0.4).get(n)));
  const config = tinyRunConfig(over);
  const state = createTrainState(gpu, model, config);
  return { model, decoder, tokenizer, config, state, trainer: new Trainer({ gpu, decoder, tokenizer, state, maxTokens: 512 }) };
}
