// Model folders: loadModelFiles over in-memory, browser-File and on-disk folders; sharded checkpoints;
// errors naming the file for missing files, missing shards and weights that do not fit the config.

import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseModelConfig } from './config.ts';
import { ModelFileError } from './errors.ts';
import { browserFiles, loadModelFiles, memoryFiles } from './folder.ts';
import { nodeModelFiles } from './node-files.ts';
import { tensorToFloat32, writeSafetensors } from './safetensors.ts';
import { tinyModelFolder, tinyTokenizer, weightsToWrite, TINY_QWEN2_CONFIG } from './file-fixtures.ts';

async function expectLoadError(files: Record<string, Uint8Array | string>, code: string, text: RegExp): Promise<void> {
  try {
    await loadModelFiles(memoryFiles('tiny', files));
  } catch (e) {
    expect(e).toBeInstanceOf(ModelFileError);
    expect((e as ModelFileError).code, (e as Error).message).toBe(code);
    expect((e as Error).message).toMatch(text);
    return;
  }
  throw new Error(`expected ${code}`);
}

describe('loadModelFiles', () => {
  it('loads config, weights and tokenizer from memory', async () => {
    const m = await loadModelFiles(memoryFiles('tiny', tinyModelFolder('BF16')));
    expect(m.config.modelType).toBe('qwen2');
    expect(m.report.ok).toBe(true);
    const q = m.weights.get('model.layers.1.self_attn.q_proj.bias')!;
    expect(q).toMatchObject({ dtype: 'BF16', shape: [16], file: 'tiny/model.safetensors' });
    expect(m.tokenizer!.encode('hello world')).toEqual([tinyTokenizer().ids.hello, tinyTokenizer().ids['Ġworld']]);
    // eos ids: tokenizer_config's <|im_end|> plus config.json's eos_token_id
    expect(m.tokenizer!.eosIds).toEqual([267]);
  });

  it('resolves a sharded checkpoint through model.safetensors.index.json', async () => {
    const config = parseModelConfig(TINY_QWEN2_CONFIG);
    const all = weightsToWrite(config, 'F32');
    const a = all.filter((_, i) => i % 2 === 0);
    const b = all.filter((_, i) => i % 2 === 1);
    const weightMap: Record<string, string> = {};
    a.forEach((t) => {
      weightMap[t.name] = 'model-00001-of-00002.safetensors';
    });
    b.forEach((t) => {
      weightMap[t.name] = 'model-00002-of-00002.safetensors';
    });
    const files = {
      'config.json': JSON.stringify(TINY_QWEN2_CONFIG),
      'model.safetensors.index.json': JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }),
      'model-00001-of-00002.safetensors': writeSafetensors(a),
      'model-00002-of-00002.safetensors': writeSafetensors(b),
    };
    const m = await loadModelFiles(memoryFiles('sharded', files));
    expect(m.tokenizer).toBeUndefined();
    expect(m.weights.size).toBe(all.length);
    expect(m.weights.get(b[0].name)!.file).toBe('sharded/model-00002-of-00002.safetensors');
    expect(tensorToFloat32(m.weights.get(b[0].name)!)).toEqual(b[0].data);

    const { ['model-00002-of-00002.safetensors']: _, ...missingShard } = files;
    await expectLoadError(missingShard, 'FILE_MISSING', /tiny\/model-00002-of-00002.safetensors: shard listed/);
    await expectLoadError(
      {
        ...files,
        'model.safetensors.index.json': JSON.stringify({ weight_map: { ...weightMap, extra: 'model-00001-of-00002.safetensors' } }),
      },
      'TENSOR_MISSING',
      /model-00001-of-00002.safetensors: tensor "extra" is listed/,
    );
  });

  it('names the file and the problem', async () => {
    const good = tinyModelFolder('F16');
    const { ['config.json']: _c, ...noConfig } = good;
    await expectLoadError(noConfig, 'FILE_MISSING', /tiny\/config.json: config.json is missing/);
    const { ['model.safetensors']: _w, ...noWeights } = good;
    await expectLoadError(noWeights, 'FILE_MISSING', /neither model.safetensors nor/);
    await expectLoadError({ ...noWeights, 'pytorch_model.bin': new Uint8Array(4) }, 'FILE_MISSING', /pickles/);
    await expectLoadError(
      { ...good, 'config.json': '{"model_type": "gpt2"}' },
      'CONFIG_UNSUPPORTED',
      /tiny\/config.json: "model_type" is "gpt2"/,
    );
    await expectLoadError(
      { ...good, 'model.safetensors': (good['model.safetensors'] as Uint8Array).slice(0, -10) },
      'ST_TRUNCATED',
      /tiny\/model.safetensors/,
    );
    await expectLoadError(
      { ...good, 'config.json': JSON.stringify({ ...TINY_QWEN2_CONFIG, intermediate_size: 32 }) },
      'WEIGHTS_MISMATCH',
      /tiny\/model.safetensors: tensor "model.layers.0.mlp.gate_proj.weight" has shape \[24, 16\], config.json implies \[32, 16\]/,
    );
    await expectLoadError({ ...good, 'tokenizer.json': '{"model": 1' }, 'TOKENIZER_INVALID', /tiny\/tokenizer.json: invalid JSON/);
    const lenient = await loadModelFiles(
      memoryFiles('tiny', { ...good, 'config.json': JSON.stringify({ ...TINY_QWEN2_CONFIG, num_hidden_layers: 3 }) }),
      { strict: false },
    );
    expect(lenient.report.missing.length).toBe(12);
  });

  it('reads a browser FileList (webkitRelativePath) and chat_template.jinja / generation_config.json', async () => {
    const files = {
      ...tinyModelFolder('F32'),
      'chat_template.jinja': '<{{ messages[0].content }}>',
      'generation_config.json': '{"eos_token_id": [267, 265]}',
    };
    const list = Object.entries(files).map(([p, v]) => {
      const f = new File([v], p);
      Object.defineProperty(f, 'webkitRelativePath', { value: `tiny-qwen/${p}` });
      return f;
    });
    const bf = browserFiles(list);
    expect(bf.name).toBe('tiny-qwen');
    expect(bf.list().sort()).toEqual(Object.keys(files).sort());
    const m = await loadModelFiles(bf);
    expect(m.tokenizer!.applyChatTemplate([{ role: 'user', content: 'hi' }])).toBe('<hi>');
    expect(m.tokenizer!.eosIds).toEqual([267, 265]);
    await expect(bf.read('nope.json')).rejects.toThrow(/tiny-qwen\/nope.json: no such file/);
  });

  it('reads a directory on disk (node-files)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'marft-model-'));
    try {
      for (const [p, v] of Object.entries(tinyModelFolder('BF16'))) await writeFile(join(dir, p), v);
      await mkdir(join(dir, '.cache'));
      await writeFile(join(dir, '.cache', 'x'), 'ignored');
      const files = await nodeModelFiles(dir);
      expect(files.list().sort()).toEqual(['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
      const m = await loadModelFiles(files);
      expect(m.weights.get('model.norm.weight')!.file).toMatch(/model.safetensors$/);
      await expect(files.read('../etc/passwd')).rejects.toThrow(/leaves the model folder/);
    } finally {
      await rm(dir, { recursive: true });
    }
  });
});
