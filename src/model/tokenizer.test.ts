// Tokenizer: a byte-level BPE tokenizer.json built in memory; encode/decode round trips, merges, special
// tokens, the chat template, and clear errors for malformed files.

import { describe, expect, it } from 'vitest';
import { ModelFileError } from './errors.ts';
import { tinyTokenizer } from './file-fixtures.ts';
import { loadTokenizer } from './tokenizer.ts';

describe('loadTokenizer', () => {
  const { tokenizerJson, tokenizerConfig, ids } = tinyTokenizer();
  const tok = loadTokenizer(JSON.stringify(tokenizerJson), tokenizerConfig);

  it('applies the merges and round-trips arbitrary text through bytes', () => {
    expect(tok.encode('hello world')).toEqual([ids.hello, ids['Ġworld']]);
    expect(tok.encode('h')).toEqual(['h'.charCodeAt(0)]);
    for (const text of ['hello world', 'Héllo, wörld! ✓ 42\ttabs\nnew line', '日本語 😀 — “quotes”', '  leading spaces', '']) {
      const enc = tok.encode(text);
      expect(enc.every((id) => id >= 0 && id < 256 + 9)).toBe(true);
      expect(tok.decode(enc)).toBe(text);
    }
    // UTF-8 bytes: 'é' is two byte tokens
    expect(tok.encode('é')).toEqual([0xc3, 0xa9]);
  });

  it('handles special tokens, addSpecialTokens and skipSpecialTokens', () => {
    expect(tok.encode('hello', { addSpecialTokens: true })).toEqual([ids['<|endoftext|>'], ids.hello]);
    const enc = tok.encode('<|im_start|>hello<|im_end|>');
    expect(enc).toEqual([ids['<|im_start|>'], ids.hello, ids['<|im_end|>']]);
    expect(tok.decode(enc)).toBe('<|im_start|>hello<|im_end|>');
    expect(tok.decode(enc, { skipSpecialTokens: true })).toBe('hello');
  });

  it('exposes special ids (eos as an {content} object, pad as a string) and the vocab size', () => {
    expect(tok.eosIds).toEqual([ids['<|im_end|>']]);
    expect(tok.padId).toBe(ids['<|endoftext|>']);
    expect(tok.bosId).toBeNull();
    expect(tok.vocabSize).toBe(256 + 9 + 3);
    expect(loadTokenizer(tokenizerJson, tokenizerConfig, { eosTokenIds: [ids['<|endoftext|>'], ids['<|im_end|>']] }).eosIds).toEqual([
      ids['<|im_end|>'],
      ids['<|endoftext|>'],
    ]);
  });

  it('renders the chat template', () => {
    const msgs = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hello world' },
    ];
    const text = tok.applyChatTemplate(msgs, { addGenerationPrompt: true });
    expect(text).toBe('<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhello world<|im_end|>\n<|im_start|>assistant\n');
    expect(tok.applyChatTemplate(msgs)).not.toContain('assistant');
    const enc = tok.encode(text);
    expect(enc.filter((id) => id === ids['<|im_start|>']).length).toBe(3);
    expect(tok.decode(enc)).toBe(text);
  });

  it('uses bos_token in templates and picks the "default" of a template list', () => {
    const t = loadTokenizer(tokenizerJson, {
      ...tokenizerConfig,
      bos_token: '<|endoftext|>',
      chat_template: [
        { name: 'tool_use', template: 'TOOLS' },
        { name: 'default', template: '{{ bos_token }}{{ messages[0].content }}' },
      ],
    });
    expect(t.bosId).toBe(ids['<|endoftext|>']);
    expect(t.applyChatTemplate([{ role: 'user', content: 'x' }])).toBe('<|endoftext|>x');
    const over = loadTokenizer(tokenizerJson, tokenizerConfig, { chatTemplate: '[{{ messages | length }}]' });
    expect(over.applyChatTemplate([{ role: 'user', content: 'x' }])).toBe('[1]');
  });

  it('fails clearly on malformed files', () => {
    const code = (fn: () => unknown): string => {
      try {
        fn();
      } catch (e) {
        expect(e).toBeInstanceOf(ModelFileError);
        return `${(e as ModelFileError).code}: ${(e as Error).message}`;
      }
      return 'no error';
    };
    expect(code(() => loadTokenizer('{oops', tokenizerConfig))).toMatch(/^TOKENIZER_INVALID: tokenizer.json: invalid JSON/);
    expect(code(() => loadTokenizer({ added_tokens: [] }, tokenizerConfig))).toMatch(/"model" is missing/);
    expect(code(() => loadTokenizer({ ...tokenizerJson, model: { type: 'Nope' } }, tokenizerConfig))).toMatch(
      /^TOKENIZER_INVALID: .*cannot build/,
    );
    expect(code(() => loadTokenizer(tokenizerJson, { ...tokenizerConfig, eos_token: '<|nope|>' }))).toMatch(
      /tokenizer_config.json: "eos_token" "<\|nope\|>" is not in the vocabulary/,
    );
    expect(code(() => loadTokenizer(tokenizerJson, { ...tokenizerConfig, eos_token: 5 }))).toMatch(/"eos_token" must be a string/);
    const noTemplate = loadTokenizer(tokenizerJson, { ...tokenizerConfig, chat_template: undefined });
    expect(noTemplate.hasChatTemplate).toBe(false);
    expect(code(() => noTemplate.applyChatTemplate([]))).toMatch(/^CHAT_TEMPLATE: .*no chat_template/);
    const broken = loadTokenizer(tokenizerJson, { ...tokenizerConfig, chat_template: '{% for m in messages %}' });
    expect(code(() => broken.applyChatTemplate([]))).toMatch(/^CHAT_TEMPLATE: .*does not parse/);
    const raising = loadTokenizer(tokenizerJson, { ...tokenizerConfig, chat_template: "{{ raise_exception('roles must alternate') }}" });
    expect(code(() => raising.applyChatTemplate([]))).toMatch(/failed to render .*roles must alternate/);
  });
});
