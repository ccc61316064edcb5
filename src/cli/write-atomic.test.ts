// writeFileAtomic: the target holds the old bytes or the new ones, never part of them; a failed write leaves no temporary file.

import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeFileAtomic } from './write-atomic.ts';

describe('writeFileAtomic', () => {
  it('writes bytes, text and chunks whole, into folders it makes', () => {
    const dir = mkdtempSync(join(tmpdir(), 'atomic-'));
    writeFileAtomic(join(dir, 'a', 'b.bin'), new Uint8Array([1, 2, 3]));
    writeFileAtomic(join(dir, 'c.yaml'), 'x: 1\n');
    writeFileAtomic(join(dir, 'd.data'), [new Uint8Array([4]), new Uint8Array([5, 6])]);
    expect([...readFileSync(join(dir, 'a', 'b.bin'))]).toEqual([1, 2, 3]);
    expect(readFileSync(join(dir, 'c.yaml'), 'utf8')).toBe('x: 1\n');
    expect([...readFileSync(join(dir, 'd.data'))]).toEqual([4, 5, 6]);
    expect(readdirSync(dir).sort()).toEqual(['a', 'c.yaml', 'd.data']);
  });

  it('a write that fails midway leaves the previous file as it was and no temporary file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'atomic-'));
    const out = join(dir, 'model.onnx.data');
    writeFileSync(out, 'previous export');
    function* chunks() {
      yield new Uint8Array(1024).fill(7);
      throw new Error('disk full');
    }
    expect(() => writeFileAtomic(out, chunks())).toThrow('disk full');
    expect(readFileSync(out, 'utf8')).toBe('previous export');
    expect(readdirSync(dir)).toEqual(['model.onnx.data']);
  });
});
