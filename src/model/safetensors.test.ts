// safetensors: write -> parse round trips for F32/F16/BF16, the Python library's byte layout, the 16-bit
// packing the kernels read, shard indexes, and a table of malformed files that must each fail with a
// ModelFileError of the right code naming the file.

import { describe, expect, it } from 'vitest';
import { pack16, round16 } from '../gpu/half.ts';
import { ModelFileError, type ModelFileErrorCode } from './errors.ts';
import { parseSafetensors, parseShardIndex, shardFiles, tensorToFloat32, tensorToPacked16, writeSafetensors } from './safetensors.ts';

const values = Float32Array.from([0, 1, -2.5, 3.14159, 1e-3, -65504, 1.5e-7, 42]);

/** A safetensors file from a header object and a data section, as a hostile writer could make it. */
function rawFile(header: unknown, data: Uint8Array | number, headerLenOverride?: number): Uint8Array {
  const json = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const d = typeof data === 'number' ? new Uint8Array(data) : data;
  const out = new Uint8Array(8 + json.length + d.length);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, headerLenOverride ?? json.length, true);
  out.set(json, 8);
  out.set(d, 8 + json.length);
  return out;
}

function expectError(fn: () => unknown, code: ModelFileErrorCode, text: RegExp): void {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ModelFileError);
    const err = e as ModelFileError;
    expect(err.code, err.message).toBe(code);
    expect(err.message).toMatch(text);
    expect(err.message).toContain('bad.safetensors');
    return;
  }
  throw new Error(`expected a ModelFileError ${code}`);
}

describe('safetensors round trip', () => {
  it('F32, F16 and BF16 survive write -> parse', () => {
    const bytes = writeSafetensors(
      [
        { name: 'w.f32', dtype: 'F32', shape: [2, 4], data: values },
        { name: 'w.f16', dtype: 'F16', shape: [8], data: values },
        { name: 'w.bf16', dtype: 'BF16', shape: [4, 2], data: values },
        { name: 'odd.bf16', dtype: 'BF16', shape: [3], data: pack16([1, 2, 3], 'bf16') },
      ],
      { format: 'pt' },
    );
    const st = parseSafetensors(bytes, 'rt.safetensors');
    expect(st.metadata).toEqual({ format: 'pt' });
    expect([...st.tensors.keys()].sort()).toEqual(['odd.bf16', 'w.bf16', 'w.f16', 'w.f32']);
    const f32 = st.tensors.get('w.f32')!;
    expect(f32.shape).toEqual([2, 4]);
    expect(f32.data.buffer).toBe(bytes.buffer); // a view, no copy
    expect(tensorToFloat32(f32)).toEqual(values);
    expect(Array.from(tensorToFloat32(st.tensors.get('w.f16')!))).toEqual(Array.from(round16(values, 'f16')));
    expect(Array.from(tensorToFloat32(st.tensors.get('w.bf16')!))).toEqual(Array.from(round16(values, 'bf16')));
    expect(Array.from(tensorToFloat32(st.tensors.get('odd.bf16')!))).toEqual([1, 2, 3]);
  });

  it('packs 16-bit tensors two per u32, element 2k in the low half, without widening', () => {
    const bytes = writeSafetensors([
      { name: 'h', dtype: 'BF16', shape: [5], data: Float32Array.from([1, 2, 3, 4, 5]) },
      { name: 'f', dtype: 'F32', shape: [5], data: Float32Array.from([1, 2, 3, 4, 5]) },
    ]);
    const st = parseSafetensors(bytes, 'p.safetensors');
    const h = tensorToPacked16(st.tensors.get('h')!);
    expect(h.dtype).toBe('bf16');
    expect(Array.from(h.words)).toEqual(Array.from(pack16([1, 2, 3, 4, 5], 'bf16')));
    expect(h.words[0] & 0xffff).toBe(0x3f80); // 1.0 in the low half
    expect(h.words[0] >>> 16).toBe(0x4000); // 2.0 in the high half
    expect(Array.from(tensorToPacked16(st.tensors.get('f')!, 'f16').words)).toEqual(Array.from(pack16([1, 2, 3, 4, 5], 'f16')));
    expect(Array.from(tensorToPacked16(st.tensors.get('h')!, 'f16').words)).toEqual(Array.from(pack16([1, 2, 3, 4, 5], 'f16')));
    expect(() => tensorToPacked16(st.tensors.get('f')!)).toThrow(ModelFileError);
  });

  it('lays the file out as the Python library does (dtype order, metadata first, space padding to 8)', () => {
    const bytes = writeSafetensors(
      [
        { name: 'b', dtype: 'F16', shape: [1], data: Float32Array.from([1]) },
        { name: 'z', dtype: 'BF16', shape: [1], data: Float32Array.from([1]) },
        { name: 'a', dtype: 'F32', shape: [2], data: Float32Array.from([1, 2]) },
      ],
      { format: 'pt' },
    );
    const n = new DataView(bytes.buffer).getUint32(0, true);
    expect(n % 8).toBe(0);
    const header = new TextDecoder().decode(bytes.subarray(8, 8 + n));
    expect(header.trimEnd()).toBe(
      '{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},' +
        '"z":{"dtype":"BF16","shape":[1],"data_offsets":[8,10]},"b":{"dtype":"F16","shape":[1],"data_offsets":[10,12]}}',
    );
    expect(header.slice(header.trimEnd().length)).toMatch(/^ *$/);
    expect(bytes.length).toBe(8 + n + 12);
  });

  it('reads integer dtypes and zero-size tensors', () => {
    const data = new Uint8Array(8 + 4 + 2);
    new DataView(data.buffer).setBigInt64(0, -7n, true);
    new DataView(data.buffer).setInt32(8, 123456, true);
    data.set([9, 250], 12);
    const st = parseSafetensors(
      rawFile(
        {
          i64: { dtype: 'I64', shape: [1], data_offsets: [0, 8] },
          i32: { dtype: 'I32', shape: [1], data_offsets: [8, 12] },
          u8: { dtype: 'U8', shape: [2], data_offsets: [12, 14] },
          empty: { dtype: 'F32', shape: [0, 3], data_offsets: [14, 14] },
        },
        data,
      ),
      'ints.safetensors',
    );
    expect(Array.from(tensorToFloat32(st.tensors.get('i64')!))).toEqual([-7]);
    expect(Array.from(tensorToFloat32(st.tensors.get('i32')!))).toEqual([123456]);
    expect(Array.from(tensorToFloat32(st.tensors.get('u8')!))).toEqual([9, 250]);
    expect(tensorToFloat32(st.tensors.get('empty')!).length).toBe(0);
  });

  it('refuses invalid writer input', () => {
    expect(() => writeSafetensors([{ name: 'a', dtype: 'F32', shape: [3], data: new Float32Array(2) }])).toThrow(/expected 3/);
    expect(() =>
      writeSafetensors([
        { name: 'a', dtype: 'F32', shape: [1], data: new Float32Array(1) },
        { name: 'a', dtype: 'F32', shape: [1], data: new Float32Array(1) },
      ]),
    ).toThrow(/duplicate/);
  });
});

describe('safetensors validation', () => {
  const good = { t: { dtype: 'F32', shape: [2, 2], data_offsets: [0, 16] } };
  const cases: Array<{ what: string; file: () => Uint8Array; code: ModelFileErrorCode; msg: RegExp }> = [
    { what: 'empty file', file: () => new Uint8Array(3), code: 'ST_TOO_SHORT', msg: /shorter than the 8-byte/ },
    { what: 'header length past the end', file: () => rawFile(good, 16, 10_000), code: 'ST_HEADER_SIZE', msg: /runs past the end/ },
    { what: 'absurd header length', file: () => rawFile(good, 16, 0xffffffff), code: 'ST_HEADER_SIZE', msg: /absurd/ },
    {
      what: 'header length > 2^32',
      file: () => {
        const f = rawFile(good, 16);
        new DataView(f.buffer).setUint32(4, 1, true);
        return f;
      },
      code: 'ST_HEADER_SIZE',
      msg: /absurd/,
    },
    { what: 'invalid JSON', file: () => rawFile('{"t": {', 16), code: 'ST_HEADER_JSON', msg: /invalid JSON/ },
    {
      what: 'invalid UTF-8',
      file: () => {
        const f = rawFile('{"\u00e9":1}', 0);
        f[10] = 0xff;
        return f;
      },
      code: 'ST_HEADER_JSON',
      msg: /UTF-8/,
    },
    { what: 'header not an object', file: () => rawFile('[1,2]', 0), code: 'ST_HEADER_SCHEMA', msg: /not an object/ },
    {
      what: 'unknown dtype',
      file: () => rawFile({ t: { dtype: 'F8_E4M3', shape: [4], data_offsets: [0, 4] } }, 4),
      code: 'ST_DTYPE',
      msg: /unknown or unsupported dtype "F8_E4M3"/,
    },
    {
      what: 'shape/offset size mismatch',
      file: () => rawFile({ t: { dtype: 'F32', shape: [2, 3], data_offsets: [0, 16] } }, 16),
      code: 'ST_SHAPE',
      msg: /needs 24 bytes but data_offsets \[0, 16\] span 16/,
    },
    {
      what: 'negative dim',
      file: () => rawFile({ t: { dtype: 'F32', shape: [-1, 4], data_offsets: [0, 16] } }, 16),
      code: 'ST_SHAPE',
      msg: /not a non-negative integer/,
    },
    {
      what: 'fractional dim',
      file: () => rawFile({ t: { dtype: 'F32', shape: [1.5], data_offsets: [0, 6] } }, 6),
      code: 'ST_SHAPE',
      msg: /not a non-negative integer/,
    },
    {
      what: 'huge dims',
      file: () => rawFile({ t: { dtype: 'F32', shape: [2 ** 40, 2 ** 40], data_offsets: [0, 16] } }, 16),
      code: 'ST_SHAPE',
      msg: /needs/,
    },
    {
      what: 'missing data_offsets',
      file: () => rawFile({ t: { dtype: 'F32', shape: [1] } }, 4),
      code: 'ST_HEADER_SCHEMA',
      msg: /data_offsets/,
    },
    {
      what: 'end before begin',
      file: () => rawFile({ t: { dtype: 'U8', shape: [0], data_offsets: [4, 0] } }, 4),
      code: 'ST_OFFSETS',
      msg: /end before/,
    },
    {
      what: 'overlapping offsets',
      file: () =>
        rawFile(
          {
            a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
            b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] },
          },
          12,
        ),
      code: 'ST_OFFSETS',
      msg: /overlaps tensor "a"/,
    },
    {
      what: 'gap between tensors',
      file: () =>
        rawFile(
          {
            a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] },
            b: { dtype: 'F32', shape: [1], data_offsets: [8, 12] },
          },
          12,
        ),
      code: 'ST_OFFSETS',
      msg: /gap/,
    },
    {
      what: 'truncated data',
      file: () => rawFile(good, 10),
      code: 'ST_TRUNCATED',
      msg: /data section is 10 bytes but the header needs 16/,
    },
    { what: 'trailing bytes', file: () => rawFile(good, 20), code: 'ST_TRAILING', msg: /4 bytes after/ },
    {
      what: 'non-string metadata',
      file: () => rawFile({ __metadata__: { n: 1 } }, 0),
      code: 'ST_HEADER_SCHEMA',
      msg: /__metadata__\["n"\]/,
    },
  ];
  for (const c of cases) {
    it(`rejects ${c.what}`, () => expectError(() => parseSafetensors(c.file(), 'bad.safetensors'), c.code, c.msg));
  }

  it('a truncated real file fails cleanly at every cut', () => {
    const bytes = writeSafetensors([{ name: 'w', dtype: 'BF16', shape: [3, 5], data: new Float32Array(15).fill(1) }]);
    for (let cut = 0; cut < bytes.length; cut++) {
      expect(() => parseSafetensors(bytes.subarray(0, cut), 'cut.safetensors')).toThrow(ModelFileError);
    }
  });
});

describe('shard index', () => {
  it('maps tensors to shard files', () => {
    const idx = parseShardIndex(
      JSON.stringify({
        metadata: { total_size: 10 },
        weight_map: { a: 'model-00001-of-00002.safetensors', b: 'model-00002-of-00002.safetensors', c: 'model-00001-of-00002.safetensors' },
      }),
    );
    expect(idx.get('b')).toBe('model-00002-of-00002.safetensors');
    expect(shardFiles(idx)).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']);
  });
  it('rejects a malformed index', () => {
    expect(() => parseShardIndex('{"weight_map": 3}')).toThrow(/weight_map/);
    expect(() => parseShardIndex({ weight_map: { a: '../x.safetensors' } })).toThrow(/outside the folder/);
    expect(() => parseShardIndex('nope')).toThrow(ModelFileError);
  });
});
