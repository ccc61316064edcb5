// marft tokenize --model DIR --text "..." [--no-special]
// Prints the token ids as a JSON array. DIR needs only tokenizer.json (tokenizer_config.json if present).
// Special tokens are added by default, as transformers' tokenizer.encode does.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fail } from '../../model/errors.ts';
import { loadTokenizer } from '../../model/tokenizer.ts';
import { parse, required } from '../args.ts';

export const usage = 'marft tokenize --model DIR --text "..." [--no-special]';

export async function tokenizeCommand(argv: string[]): Promise<void> {
  const a = parse(argv, { model: { type: 'string' }, text: { type: 'string' }, 'no-special': { type: 'boolean' } });
  const dir = required(a.model, 'model');
  const text = a.text;
  if (typeof text !== 'string') required(undefined, 'text');
  const read = async (f: string): Promise<string | null> => {
    try {
      return await readFile(join(dir, f), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  };
  const tj = await read('tokenizer.json');
  if (tj === null) fail('FILE_MISSING', join(dir, 'tokenizer.json'), 'tokenizer.json is missing');
  const tok = loadTokenizer(tj, await read('tokenizer_config.json'), { fileName: join(dir, 'tokenizer.json') });
  process.stdout.write(`${JSON.stringify(tok.encode(text as string, { addSpecialTokens: !a['no-special'] }))}\n`);
}
