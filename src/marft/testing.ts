// Test helpers for src/marft: a tiny random model with the byte-level test tokenizer, a train state and a
// trainer for the tiny 2-agent run config (src/config/testing.ts).

import type { Gpu } from '../gpu/gpu.ts';
import { Decoder } from '../model/decoder.ts';
import { TINY_QWEN2_CONFIG, tinyModelFolder, tinyTokenizer } from '../model/file-fixtures.ts';
import { createNodeGpu } from '../gpu/node.ts';
import { Session, memoryFiles } from './session.ts';
import { tinyConfig, tinyWeights } from '../model/testing.ts';
import { loadTokenizer } from '../model/tokenizer.ts';
import { uploadWeights } from '../model/weights.ts';
import { tinyRunConfig } from '../config/testing.ts';
import { createTrainState } from './state.ts';
import { Trainer } from './trainer.ts';
import { Envs } from '../envs/registry.ts';
import type { CheckpointStore } from '../platform/storage/store.ts';

/** An iteration's metrics without its timings (seconds per phase, tokens per second), which differ between runs. */
export const untimed = <M extends { seconds: unknown; tokensPerSecond: number }>({ seconds: _s, tokensPerSecond: _t, ...rest }: M) => rest;

/** The tiny model and a run on it; `envs` (default: built-ins, no sandbox) is where its environment comes from. */
export function tinySetup(gpu: Gpu, over: Record<string, unknown> = {}, envs = new Envs(null)) {
  const tj = tinyTokenizer();
  const tokenizer = loadTokenizer(tj.tokenizerJson, tj.tokenizerConfig);
  const model = tinyConfig({ vocab_size: tokenizer.vocabSize, max_position_embeddings: 256 });
  const decoder = new Decoder(
    gpu,
    model,
    uploadWeights(gpu, model, (n) => tinyWeights(model, 9, 0.4).get(n)),
  );
  const config = tinyRunConfig(over);
  const state = createTrainState(gpu, model, config);
  return { model, decoder, tokenizer, config, state, envs, trainer: new Trainer({ gpu, envs, decoder, tokenizer, state, maxTokens: 512 }) };
}

/**
 * A Session on the tiny model (F32, 256 positions) whose devices are private Dawn devices, each pushed onto
 * `devices` as it is made, so a test can destroy the one in use (a device loss) and see the next one made.
 * `kernels`: where its kernel cache is kept (none by default).
 */
export function lossTestSession(devices: Gpu[], kernels?: CheckpointStore): Session {
  const folder = { ...tinyModelFolder('F32'), 'config.json': JSON.stringify({ ...TINY_QWEN2_CONFIG, max_position_embeddings: 256 }) };
  return new Session({
    device: async () => {
      const g = await createNodeGpu();
      devices.push(g);
      return g;
    },
    model: async (path) => ({ files: memoryFiles(path || 'tiny', folder), name: path || 'tiny', baseModel: path || 'tiny' }),
    refuse: (code, message) => new Error(`${code}: ${message}`),
    sandbox: null,
    ...(kernels ? { kernels } : {}),
  });
}
