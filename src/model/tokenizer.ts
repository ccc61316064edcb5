// The tokenizer of a Hugging Face model folder: tokenizer.json through @huggingface/tokenizers (ids identical
// to Python's `tokenizers`), the chat template of tokenizer_config.json (or chat_template.jinja) through
// @huggingface/jinja, and the special ids the sampler needs (eos, bos, pad). tokenizer_config's special tokens
// may be strings or {content: "..."} objects (AddedToken dicts); a chat_template may be a string or a list of
// {name, template} (the "default" one is used, as transformers does).

import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import { fail, isObject, ModelFileError, parseJsonFile } from './errors.ts';

export interface ChatMessage {
  role: string;
  content: string;
}

export interface LoadedTokenizer {
  encode(text: string, opts?: { addSpecialTokens?: boolean }): number[];
  decode(ids: readonly number[], opts?: { skipSpecialTokens?: boolean }): string;
  /** Renders the chat template; throws CHAT_TEMPLATE when the tokenizer has none. */
  applyChatTemplate(messages: readonly ChatMessage[], opts?: { addGenerationPrompt?: boolean; extra?: Record<string, unknown> }): string;
  readonly hasChatTemplate: boolean;
  /** Ids that end generation: tokenizer_config's eos_token plus any given in options (config/generation_config). */
  readonly eosIds: number[];
  readonly bosId: number | null;
  readonly padId: number | null;
  /** Largest token id + 1, added tokens included (the model's vocab_size may be larger, padded). */
  readonly vocabSize: number;
  tokenToId(token: string): number | undefined;
  idToToken(id: number): string | undefined;
}

export interface TokenizerOptions {
  /** A chat template that overrides tokenizer_config's (e.g. the content of chat_template.jinja). */
  chatTemplate?: string;
  /** More end-of-sequence ids (config.json / generation_config.json eos_token_id). */
  eosTokenIds?: readonly number[];
  /** For error messages. */
  fileName?: string;
  configFileName?: string;
}

/** A special token of tokenizer_config: "<s>", {"content": "<s>", ...}, or null. */
function tokenString(v: unknown, field: string, file: string): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return v;
  if (isObject(v) && typeof v.content === 'string') return v.content;
  return fail('TOKENIZER_INVALID', file, `"${field}" must be a string or an object with "content", got ${JSON.stringify(v)}`);
}

function pickChatTemplate(v: unknown, file: string): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) {
    const named = v.filter(
      (t): t is { name: string; template: string } => isObject(t) && typeof t.name === 'string' && typeof t.template === 'string',
    );
    if (named.length !== v.length) fail('TOKENIZER_INVALID', file, '"chat_template" list entries must be {name, template}');
    return named.find((t) => t.name === 'default')?.template ?? null;
  }
  return fail('TOKENIZER_INVALID', file, '"chat_template" must be a string or a list of {name, template}');
}

/** Builds a tokenizer from tokenizer.json (object or text) and tokenizer_config.json (object or text, optional). */
export function loadTokenizer(
  tokenizerJson: object | string,
  tokenizerConfig?: object | string | null,
  options: TokenizerOptions = {},
): LoadedTokenizer {
  const file = options.fileName ?? 'tokenizer.json';
  const cfgFile = options.configFileName ?? 'tokenizer_config.json';
  const tj = typeof tokenizerJson === 'string' ? parseJsonFile(tokenizerJson, file, 'TOKENIZER_INVALID') : tokenizerJson;
  if (!isObject(tj)) fail('TOKENIZER_INVALID', file, 'not a JSON object');
  if (!isObject(tj.model)) fail('TOKENIZER_INVALID', file, '"model" is missing or not an object');
  if (tj.added_tokens !== undefined && !Array.isArray(tj.added_tokens)) fail('TOKENIZER_INVALID', file, '"added_tokens" is not a list');
  const cfgRaw =
    tokenizerConfig === undefined || tokenizerConfig === null
      ? {}
      : typeof tokenizerConfig === 'string'
        ? parseJsonFile(tokenizerConfig, cfgFile, 'TOKENIZER_INVALID')
        : tokenizerConfig;
  if (!isObject(cfgRaw)) fail('TOKENIZER_INVALID', cfgFile, 'not a JSON object');

  // The library iterates added_tokens and reads the other pipeline stages as possibly null.
  const full = { normalizer: null, pre_tokenizer: null, post_processor: null, decoder: null, added_tokens: [], ...tj };
  let tok: Tokenizer;
  try {
    tok = new Tokenizer(full, cfgRaw);
  } catch (e) {
    return fail('TOKENIZER_INVALID', file, `cannot build the tokenizer (${(e as Error).message})`);
  }
  // The library builds from a malformed pipeline stage (e.g. a post_processor of the wrong shape) and
  // only fails at the first encode: run one now, so a broken file fails here with its name, not mid-run.
  try {
    const probe = tok.encode('Hello world 12+3=15.', { add_special_tokens: true }).ids;
    if (probe.length) tok.decode(probe, { skip_special_tokens: false });
  } catch (e) {
    return fail('TOKENIZER_INVALID', file, `the tokenizer fails on a sample text (${(e as Error).message})`);
  }

  const bosToken = tokenString(cfgRaw.bos_token, 'bos_token', cfgFile);
  const eosToken = tokenString(cfgRaw.eos_token, 'eos_token', cfgFile);
  const padToken = tokenString(cfgRaw.pad_token, 'pad_token', cfgFile);
  const unkToken = tokenString(cfgRaw.unk_token, 'unk_token', cfgFile);
  const idOf = (t: string | null, field: string): number | null => {
    if (t === null) return null;
    const id = tok.token_to_id(t);
    if (id === undefined) fail('TOKENIZER_INVALID', cfgFile, `"${field}" ${JSON.stringify(t)} is not in the vocabulary of ${file}`);
    return id;
  };
  const bosId = idOf(bosToken, 'bos_token');
  const eosId = idOf(eosToken, 'eos_token');
  const padId = idOf(padToken, 'pad_token');
  const eosIds = [...new Set([...(eosId === null ? [] : [eosId]), ...(options.eosTokenIds ?? [])])];

  let vocabSize = 0;
  for (const id of tok.get_vocab(true).values()) vocabSize = Math.max(vocabSize, id + 1);

  const templateSrc = options.chatTemplate ?? pickChatTemplate(cfgRaw.chat_template, cfgFile);
  let template: Template | null = null;
  const compiled = (): Template => {
    if (templateSrc === null) fail('CHAT_TEMPLATE', cfgFile, 'no chat_template (a base model? use plain prompts)');
    if (!template) {
      try {
        template = new Template(templateSrc);
      } catch (e) {
        fail('CHAT_TEMPLATE', cfgFile, `chat_template does not parse (${(e as Error).message})`);
      }
    }
    return template;
  };
  const additional = Array.isArray(cfgRaw.additional_special_tokens)
    ? cfgRaw.additional_special_tokens.map((t, i) => tokenString(t, `additional_special_tokens[${i}]`, cfgFile))
    : [];

  return {
    encode: (text, opts = {}) => tok.encode(text, { add_special_tokens: opts.addSpecialTokens ?? false }).ids,
    // (the library refuses an empty list; an empty sequence decodes to '')
    decode: (ids, opts = {}) =>
      ids.length === 0 ? '' : tok.decode(ids as number[], { skip_special_tokens: opts.skipSpecialTokens ?? false }),
    applyChatTemplate(messages, opts = {}) {
      const t = compiled();
      try {
        return t.render({
          messages,
          add_generation_prompt: opts.addGenerationPrompt ?? false,
          bos_token: bosToken ?? '',
          eos_token: eosToken ?? '',
          pad_token: padToken ?? '',
          unk_token: unkToken ?? '',
          additional_special_tokens: additional,
          ...opts.extra,
        });
      } catch (e) {
        if (e instanceof ModelFileError) throw e;
        return fail('CHAT_TEMPLATE', cfgFile, `chat_template failed to render (${(e as Error).message})`);
      }
    },
    hasChatTemplate: templateSrc !== null,
    eosIds,
    bosId,
    padId,
    vocabSize,
    tokenToId: (t) => tok.token_to_id(t),
    idToToken: (id) => tok.id_to_token(id),
  };
}
