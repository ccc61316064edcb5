// Held-out evaluation plumbing: a tiny random model plays the duo team on coop-arith test problems with
// the transcripts' prompts; every agent gets an output and the env judges the solver's answer.

import { describe, expect, it } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import { parseModelConfig } from '../model/config.ts';
import { Pretrainer, initWeights, tinyLlamaConfigJson } from './train.ts';
import { buildTinyTokenizer, TINY_IDS } from './tiny-tokenizer.ts';
import { loadTokenizer } from '../model/tokenizer.ts';
import { evaluateTeam } from './eval.ts';
import { corpusTexts, makeTranscripts } from './data.ts';

describe('evaluateTeam', () => {
  it('runs the duo team over test problems and judges the solver', async () => {
    const gpu = await testGpu();
    const files = buildTinyTokenizer(corpusTexts(makeTranscripts(300, 0)));
    const tok = loadTokenizer(files.tokenizerJson, files.tokenizerConfig);
    const config = parseModelConfig(
      tinyLlamaConfigJson({
        vocabSize: 512,
        layers: 1,
        hidden: 16,
        heads: 2,
        kvHeads: 1,
        intermediate: 16,
        maxPositions: 320,
        eosTokenId: TINY_IDS.imEnd,
        padTokenId: TINY_IDS.pad,
      }),
    );
    const trainer = new Pretrainer(gpu, config, initWeights(config, 2));
    const r = await evaluateTeam(trainer.decoder, tok, { team: 'duo', n: 2, maxNewTokens: 3, difficulty: 1 });
    expect(r.n).toBe(2);
    expect(r.samples.map((s) => s.outputs.map((o) => o.role))).toEqual([
      ['planner', 'solver'],
      ['planner', 'solver'],
    ]);
    expect(r.accuracy).toBe(0); // 3 random tokens cannot hold a \boxed{} answer
    expect(r.samples[0].gold).toMatch(/^\d+$/);
    trainer.release();
  });
});
