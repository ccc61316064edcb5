import { zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { CheckpointError } from './storage/errors.ts';
import { unzipFiles, zipFiles } from './zip.ts';

function errorOf(f: () => unknown): CheckpointError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(CheckpointError);
    return e as CheckpointError;
  }
  throw new Error('expected a CheckpointError');
}

describe('zip', () => {
  const files = {
    'config.json': '{"seed": 1}\n',
    'agents/planner/adapter_model.safetensors': Uint8Array.from({ length: 300 }, (_, i) => (i * 37) & 255),
    'agents/planner/adapter_config.json': '{"r": 2}',
    'empty.txt': '',
  };

  it('round-trips files exactly and deterministically', () => {
    const z = zipFiles(files);
    expect(zipFiles(files)).toEqual(z);
    const out = unzipFiles(z);
    expect(Object.keys(out).sort()).toEqual(Object.keys(files).sort());
    for (const [p, d] of Object.entries(files)) {
      expect(out[p], p).toEqual(typeof d === 'string' ? new TextEncoder().encode(d) : d);
    }
  });

  it('rejects entries that climb out of the folder', () => {
    for (const name of ['../evil', 'a/../../evil', '/etc/passwd', 'a\\..\\evil']) {
      const z = zipSync({ [name]: new Uint8Array([1]) });
      const e = errorOf(() => unzipFiles(z));
      expect(e.code, name).toBe('ZIP_INVALID');
      expect(e.message).toContain(JSON.stringify(name));
    }
    expect(errorOf(() => zipFiles({ '../evil': 'x' })).code).toBe('PATH_INVALID');
  });

  it('refuses a zip that expands past the cap before inflating it', () => {
    const z = zipSync({ 'zeros.bin': new Uint8Array(1 << 20) }, { level: 9 });
    expect(z.length).toBeLessThan(5000);
    const e = errorOf(() => unzipFiles(z, { maxTotalBytes: 100_000 }));
    expect(e.code).toBe('ZIP_TOO_LARGE');
    expect(errorOf(() => unzipFiles(zipFiles({ a: 'x', b: 'y', c: 'z' }), { maxEntries: 2 })).code).toBe('ZIP_TOO_LARGE');
  });

  it('detects a corrupted entry and garbage input', () => {
    const z = zipFiles({ 'w.safetensors': new Uint8Array(64).fill(7) }); // stored: the data sits in the clear
    const i = z.indexOf(7);
    const bad = z.slice();
    bad[i + 10] ^= 1;
    const e = errorOf(() => unzipFiles(bad));
    expect(e.code).toBe('ZIP_INVALID');
    expect(e.message).toContain('w.safetensors');
    expect(errorOf(() => unzipFiles(new Uint8Array(100).fill(1))).code).toBe('ZIP_INVALID');
  });
});
