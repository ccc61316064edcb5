// The built-in tokenizer: BPE merges learned deterministically, a vocabulary of at most the size asked,
// exact round trips of ASCII text through @huggingface/tokenizers, single-digit tokens, special tokens
// and the ChatML template.

import { describe, expect, it } from 'vitest';
import { buildTinyTokenizer, pretokenize, TINY_ALPHABET, TINY_IDS, TINY_SPECIALS, trainBpe } from './tiny-tokenizer.ts';
import { loadTokenizer } from '../model/tokenizer.ts';

const corpus = [
  'You are the planner of a team solving a math problem.',
  'Compute 17 + 25 * 3 - 8.',
  '1. Multiply 25 by 3.\n2. Add 17 to the result.\n3. Subtract 8 from the result.',
  '25 * 3 = 75\n17 + 75 = 92\n92 - 8 = 84\nThe answer is \\boxed{84}.',
  "Now it is solver's turn. Executes the plan and gives the answer in \\boxed{}.",
  'Ann has 12 apples. Ann finds 4 more. How many apples does Ann have now?',
];

describe('tiny tokenizer', () => {
  const files = buildTinyTokenizer(corpus, { vocabSize: 200 });
  const tok = loadTokenizer(files.tokenizerJson, files.tokenizerConfig);

  it('learns merges deterministically, within the vocabulary size, never over digits', () => {
    expect(buildTinyTokenizer(corpus, { vocabSize: 200 })).toEqual(files);
    expect(files.vocabSize).toBeLessThanOrEqual(200);
    expect(tok.vocabSize).toBe(files.vocabSize);
    const merges = trainBpe(corpus, 50);
    expect(merges).toHaveLength(50);
    expect(merges.flat().join('')).not.toMatch(/\d/);
    expect(pretokenize('add 17 to x.')).toEqual(['add', ' ', '1', '7', ' to', ' x', '.']);
    expect(() => buildTinyTokenizer(corpus, { vocabSize: 50 })).toThrow(/vocabSize/);
  });

  it('round-trips the corpus exactly and keeps digits as single tokens', () => {
    for (const text of [...corpus, corpus.join('\n\n'), '  spaces\tand\ttabs  \n\n', '']) {
      const ids = tok.encode(text);
      expect(ids.every((id) => id >= 0 && id < files.vocabSize && id !== TINY_IDS.unk)).toBe(true);
      expect(tok.decode(ids)).toBe(text);
    }
    const ids = tok.encode('1234567890');
    expect(ids).toHaveLength(10);
    expect(tok.encode(' the answer').length).toBeLessThan(' the answer'.length);
    // Outside the alphabet: <|unk|>, not a crash.
    expect(tok.encode('é')).toEqual([TINY_IDS.unk]);
    expect(TINY_ALPHABET).toHaveLength(97);
  });

  it('has the special tokens and a ChatML template', () => {
    TINY_SPECIALS.forEach((t, i) => expect(tok.tokenToId(t)).toBe(i));
    expect(tok.eosIds).toEqual([TINY_IDS.imEnd]);
    expect(tok.padId).toBe(TINY_IDS.pad);
    expect(tok.bosId).toBeNull();
    const text = tok.applyChatTemplate(
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Compute 2 + 3.' },
      ],
      { addGenerationPrompt: true },
    );
    expect(text).toBe('<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nCompute 2 + 3.<|im_end|>\n<|im_start|>assistant\n');
    const ids = tok.encode(text);
    expect(ids.filter((i) => i === TINY_IDS.imStart)).toHaveLength(3);
    expect(ids.filter((i) => i === TINY_IDS.imEnd)).toHaveLength(2);
    expect(tok.decode(ids)).toBe(text);
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('system\nBe brief.\nuser\nCompute 2 + 3.\nassistant\n');
  });
});
