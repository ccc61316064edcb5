// safetensors read and write, CPU only (browser and Node).
// Layout: u64 little-endian header length N, N bytes of UTF-8 JSON
//   {"<name>": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}},
// then the data section; offsets are relative to the start of the data section.
// Validation follows the Rust reference (safetensors::SafeTensors::deserialize): every size is checked
// against the bytes actually present before anything is sized from it; tensors sorted by offset must tile
// the data section exactly (no overlap, no gap, no trailing bytes). Tensors are returned as views into the
// file's bytes (no copy); the helpers below copy into Float32Array or into 16-bit words packed two per u32
// (element 2k in the low half), the layout the kernels read. A little-endian host is assumed (every
// browser and Node platform the lab targets).

import { fromBf16Bits, fromF16Bits, toBf16Bits, toF16Bits } from '../gpu/half.ts';
import { decodeUtf8, fail, isObject, parseJsonFile } from './errors.ts';

export type SafetensorsDType = 'F64' | 'F32' | 'F16' | 'BF16' | 'I64' | 'I32' | 'I16' | 'I8' | 'U8' | 'BOOL';
export type FloatDType = 'F32' | 'F16' | 'BF16';

/** Bytes per element of each dtype the reader accepts. */
export const DTYPE_BYTES: Readonly<Record<SafetensorsDType, number>> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U8: 1,
  BOOL: 1,
};

export interface TensorView {
  readonly dtype: SafetensorsDType;
  readonly shape: readonly number[];
  /** The tensor's bytes: a view into the file (no copy). */
  readonly data: Uint8Array;
}

export interface SafetensorsFile {
  readonly tensors: Map<string, TensorView>;
  readonly metadata: Record<string, string> | null;
}

/** Above this the header is refused as corrupt (the Rust library's limit is 100 MB too). */
export const MAX_HEADER_BYTES = 100_000_000;

const numel = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** Parses a safetensors file held in memory. Throws ModelFileError (codes ST_*) naming `fileName`. */
export function parseSafetensors(bytes: Uint8Array, fileName: string): SafetensorsFile {
  if (bytes.length < 8) fail('ST_TOO_SHORT', fileName, `file is ${bytes.length} bytes, shorter than the 8-byte header length`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lo = dv.getUint32(0, true);
  const hi = dv.getUint32(4, true);
  const headerLen = hi * 2 ** 32 + lo;
  if (hi !== 0 || headerLen > MAX_HEADER_BYTES) {
    fail('ST_HEADER_SIZE', fileName, `header length ${headerLen} bytes is absurd (limit ${MAX_HEADER_BYTES})`);
  }
  if (headerLen > bytes.length - 8) {
    fail('ST_HEADER_SIZE', fileName, `header length ${headerLen} bytes runs past the end of the ${bytes.length}-byte file`);
  }
  if (headerLen < 2) fail('ST_HEADER_SIZE', fileName, `header length ${headerLen} is too small for a JSON object`);
  const header = parseJsonFile(decodeUtf8(bytes.subarray(8, 8 + headerLen), fileName, 'ST_HEADER_JSON'), fileName, 'ST_HEADER_JSON');
  if (!isObject(header)) fail('ST_HEADER_SCHEMA', fileName, 'header JSON is not an object');

  const dataStart = 8 + headerLen;
  const dataLen = bytes.length - dataStart;
  let metadata: Record<string, string> | null = null;
  const entries: Array<{ name: string; dtype: SafetensorsDType; shape: number[]; begin: number; end: number }> = [];
  for (const [name, v] of Object.entries(header)) {
    if (name === '__metadata__') {
      if (!isObject(v)) fail('ST_HEADER_SCHEMA', fileName, '__metadata__ is not an object of strings');
      for (const [k, s] of Object.entries(v)) {
        if (typeof s !== 'string') fail('ST_HEADER_SCHEMA', fileName, `__metadata__["${k}"] is not a string`);
      }
      metadata = v as Record<string, string>;
      continue;
    }
    if (!isObject(v)) fail('ST_HEADER_SCHEMA', fileName, `tensor "${name}": entry is not an object`);
    const { dtype, shape, data_offsets: offs } = v;
    if (typeof dtype !== 'string') fail('ST_HEADER_SCHEMA', fileName, `tensor "${name}": dtype is missing or not a string`);
    if (!(dtype in DTYPE_BYTES)) {
      fail(
        'ST_DTYPE',
        fileName,
        `tensor "${name}": unknown or unsupported dtype "${dtype}" (expected one of ${Object.keys(DTYPE_BYTES).join(', ')})`,
      );
    }
    if (!Array.isArray(shape)) fail('ST_HEADER_SCHEMA', fileName, `tensor "${name}": shape is missing or not an array`);
    for (const d of shape) {
      if (typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0) {
        fail('ST_SHAPE', fileName, `tensor "${name}": shape [${shape.join(', ')}] has a dim that is not a non-negative integer`);
      }
    }
    if (!Array.isArray(offs) || offs.length !== 2) fail('ST_HEADER_SCHEMA', fileName, `tensor "${name}": data_offsets is not [begin, end]`);
    const [begin, end] = offs;
    if (
      typeof begin !== 'number' ||
      typeof end !== 'number' ||
      !Number.isSafeInteger(begin) ||
      !Number.isSafeInteger(end) ||
      begin < 0 ||
      end < 0
    ) {
      fail('ST_OFFSETS', fileName, `tensor "${name}": data_offsets [${offs.join(', ')}] are not non-negative integers`);
    }
    if (end < begin) fail('ST_OFFSETS', fileName, `tensor "${name}": data_offsets [${begin}, ${end}] end before they begin`);
    const n = numel(shape as number[]);
    const bpe = DTYPE_BYTES[dtype as SafetensorsDType];
    if (!Number.isSafeInteger(n * bpe) || n * bpe !== end - begin) {
      fail(
        'ST_SHAPE',
        fileName,
        `tensor "${name}": shape [${shape.join(', ')}] ${dtype} needs ${n * bpe} bytes but data_offsets [${begin}, ${end}] span ${end - begin}`,
      );
    }
    entries.push({ name, dtype: dtype as SafetensorsDType, shape: shape as number[], begin, end });
  }

  // Sorted by offset, the tensors must tile [0, end) exactly, and `end` must be the data length.
  const sorted = [...entries].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let pos = 0;
  let prev = '';
  for (const e of sorted) {
    if (e.begin < pos)
      fail('ST_OFFSETS', fileName, `tensor "${e.name}" [${e.begin}, ${e.end}] overlaps tensor "${prev}" (which ends at ${pos})`);
    if (e.begin > pos)
      fail('ST_OFFSETS', fileName, `gap in the data section: tensor "${e.name}" begins at ${e.begin} but the previous data ends at ${pos}`);
    pos = e.end;
    prev = e.name;
  }
  if (pos > dataLen) {
    fail('ST_TRUNCATED', fileName, `data section is ${dataLen} bytes but the header needs ${pos} (tensor "${prev}" runs past the end)`);
  }
  if (pos < dataLen) fail('ST_TRAILING', fileName, `${dataLen - pos} bytes after the last tensor's data`);

  const tensors = new Map<string, TensorView>();
  for (const e of entries) {
    tensors.set(e.name, { dtype: e.dtype, shape: e.shape, data: bytes.subarray(dataStart + e.begin, dataStart + e.end) });
  }
  return { tensors, metadata };
}

/** Copies `n` elements of `bpe` bytes into a fresh, aligned typed array buffer. */
function alignedCopy(data: Uint8Array, words: number): ArrayBuffer {
  const buf = new ArrayBuffer(words * 4);
  new Uint8Array(buf).set(data);
  return buf;
}

/** The tensor as f32 values (a copy). F32/F16/BF16 exactly; F64 and integers converted (F64 rounded). */
export function tensorToFloat32(t: TensorView): Float32Array {
  const n = numel(t.shape);
  switch (t.dtype) {
    case 'F32':
      return new Float32Array(alignedCopy(t.data, n));
    case 'F16':
    case 'BF16': {
      const h = new Uint16Array(alignedCopy(t.data, Math.ceil(n / 2)), 0, n);
      const dec = t.dtype === 'BF16' ? fromBf16Bits : fromF16Bits;
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = dec(h[i]);
      return out;
    }
    default: {
      const out = new Float32Array(n);
      const dv = new DataView(t.data.buffer, t.data.byteOffset, t.data.byteLength);
      for (let i = 0; i < n; i++) out[i] = readNumber(dv, t.dtype, i);
      return out;
    }
  }
}

function readNumber(dv: DataView, dtype: SafetensorsDType, i: number): number {
  switch (dtype) {
    case 'F64':
      return dv.getFloat64(i * 8, true);
    case 'I64':
      return Number(dv.getBigInt64(i * 8, true));
    case 'I32':
      return dv.getInt32(i * 4, true);
    case 'I16':
      return dv.getInt16(i * 2, true);
    case 'I8':
      return dv.getInt8(i);
    default:
      return dv.getUint8(i); // U8, BOOL
  }
}

/**
 * The tensor as 16-bit floats packed two per u32 (element 2k in the low half of word k; an odd count leaves
 * the last high half zero; at least one word). BF16/F16 are copied bit for bit in their own format; F32 is
 * rounded (nearest even) to `target`, which is required for it; `target` other than the stored 16-bit dtype
 * converts through f32 (f16 -> bf16 is exact in range, bf16 -> f16 rounds).
 */
export function tensorToPacked16(t: TensorView, target?: 'bf16' | 'f16'): { words: Uint32Array; dtype: 'bf16' | 'f16' } {
  const n = numel(t.shape);
  const words = Math.max(1, Math.ceil(n / 2));
  const stored = t.dtype === 'BF16' ? 'bf16' : t.dtype === 'F16' ? 'f16' : null;
  if (stored && (target === undefined || target === stored)) {
    return { words: new Uint32Array(alignedCopy(t.data, words)), dtype: stored };
  }
  if (!target) fail('ST_DTYPE', 'tensorToPacked16', `a ${t.dtype} tensor needs a target 16-bit dtype (bf16 or f16)`);
  if (t.dtype !== 'F32' && !stored) fail('ST_DTYPE', 'tensorToPacked16', `cannot pack a ${t.dtype} tensor as 16-bit floats`);
  const values = tensorToFloat32(t);
  const enc = target === 'bf16' ? toBf16Bits : toF16Bits;
  const out = new Uint32Array(words);
  for (let i = 0; i < n; i++) out[i >> 1] |= enc(values[i]) << ((i & 1) * 16);
  return { words: out, dtype: target };
}

export interface TensorToWrite {
  name: string;
  dtype: FloatDType;
  shape: readonly number[];
  /**
   * F32: Float32Array of the values, or the raw little-endian bytes.
   * F16/BF16: Float32Array of values (rounded to nearest even), Uint16Array of the 16-bit patterns,
   * Uint32Array of patterns packed two per word (the kernels' layout), or the raw bytes.
   */
  data: Float32Array | Uint16Array | Uint32Array | Uint8Array;
}

/** The bytes of one tensor in file order (little-endian), validated against its shape. */
function tensorBytes(t: TensorToWrite): Uint8Array {
  const n = numel(t.shape);
  const bpe = DTYPE_BYTES[t.dtype];
  const bad = (what: string): never =>
    fail('ST_WRITE', 'writeSafetensors', `tensor "${t.name}" [${t.shape.join(', ')}] ${t.dtype}: ${what}`);
  const d = t.data;
  if (d instanceof Uint8Array) {
    if (d.length !== n * bpe) bad(`raw data is ${d.length} bytes, expected ${n * bpe}`);
    return d;
  }
  if (t.dtype === 'F32') {
    if (!(d instanceof Float32Array)) bad('F32 data must be a Float32Array or raw bytes');
    if (d.length !== n) bad(`data has ${d.length} values, expected ${n}`);
    return new Uint8Array(d.buffer, d.byteOffset, n * 4);
  }
  if (d instanceof Float32Array) {
    if (d.length !== n) bad(`data has ${d.length} values, expected ${n}`);
    const enc = t.dtype === 'BF16' ? toBf16Bits : toF16Bits;
    const h = new Uint16Array(n);
    for (let i = 0; i < n; i++) h[i] = enc(d[i]);
    return new Uint8Array(h.buffer);
  }
  if (d instanceof Uint16Array) {
    if (d.length !== n) bad(`data has ${d.length} 16-bit values, expected ${n}`);
    return new Uint8Array(d.buffer, d.byteOffset, n * 2);
  }
  const words = Math.max(1, Math.ceil(n / 2));
  if (d.length !== words && d.length !== Math.ceil(n / 2)) bad(`packed data has ${d.length} words, expected ${words}`);
  return new Uint8Array(d.buffer, d.byteOffset, n * 2);
}

/** The Rust library's Dtype enum order (F16 < BF16 < F32); it writes tensors by descending dtype, then name. */
const WRITE_RANK: Record<FloatDType, number> = { F16: 0, BF16: 1, F32: 2 };

/**
 * Serialises tensors as safetensors, the way the Python library does: tensors ordered by dtype (F32, then
 * BF16, then F16, so every tensor is aligned to its element size) then by name, metadata first in the JSON
 * header, the header padded with spaces to a multiple of 8 bytes. `metadata` becomes "__metadata__".
 */
export function writeSafetensors(tensors: readonly TensorToWrite[], metadata?: Record<string, string>): Uint8Array {
  const names = new Set<string>();
  for (const t of tensors) {
    if (typeof t.name !== 'string' || t.name === '' || t.name === '__metadata__')
      fail('ST_WRITE', 'writeSafetensors', `invalid tensor name ${JSON.stringify(t.name)}`);
    if (names.has(t.name)) fail('ST_WRITE', 'writeSafetensors', `duplicate tensor name "${t.name}"`);
    names.add(t.name);
    if (!(t.dtype === 'F32' || t.dtype === 'F16' || t.dtype === 'BF16'))
      fail('ST_WRITE', 'writeSafetensors', `tensor "${t.name}": dtype ${String(t.dtype)} is not F32, F16 or BF16`);
    for (const d of t.shape)
      if (!Number.isSafeInteger(d) || d < 0)
        fail('ST_WRITE', 'writeSafetensors', `tensor "${t.name}": shape [${t.shape.join(', ')}] has an invalid dim`);
  }
  if (metadata)
    for (const [k, v] of Object.entries(metadata))
      if (typeof v !== 'string') fail('ST_WRITE', 'writeSafetensors', `metadata "${k}" is not a string`);

  const order = [...tensors].sort((a, b) => WRITE_RANK[b.dtype] - WRITE_RANK[a.dtype] || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const chunks = order.map(tensorBytes);
  const header: Record<string, unknown> = {};
  if (metadata) header.__metadata__ = metadata;
  let off = 0;
  order.forEach((t, i) => {
    header[t.name] = { dtype: t.dtype, shape: [...t.shape], data_offsets: [off, off + chunks[i].length] };
    off += chunks[i].length;
  });
  const json = new TextEncoder().encode(JSON.stringify(header));
  const headerLen = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + headerLen + off);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, headerLen, true);
  dv.setUint32(4, 0, true);
  out.set(json, 8);
  out.fill(0x20, 8 + json.length, 8 + headerLen);
  let pos = 8 + headerLen;
  for (const c of chunks) {
    out.set(c, pos);
    pos += c.length;
  }
  return out;
}

// ---- sharded checkpoints: model.safetensors.index.json ----

export const SHARD_INDEX_FILE = 'model.safetensors.index.json';

/** Parses a shard index ({"metadata": {...}, "weight_map": {tensor: shard file}}) into tensor -> file. */
export function parseShardIndex(json: unknown, fileName = SHARD_INDEX_FILE): Map<string, string> {
  const obj = typeof json === 'string' ? parseJsonFile(json, fileName, 'INDEX_INVALID') : json;
  if (!isObject(obj)) fail('INDEX_INVALID', fileName, 'not a JSON object');
  const wm = obj.weight_map;
  if (!isObject(wm)) fail('INDEX_INVALID', fileName, '"weight_map" is missing or not an object');
  const map = new Map<string, string>();
  for (const [name, file] of Object.entries(wm)) {
    if (typeof file !== 'string' || file === '') fail('INDEX_INVALID', fileName, `weight_map["${name}"] is not a file name`);
    if (file.includes('..') || file.startsWith('/'))
      fail('INDEX_INVALID', fileName, `weight_map["${name}"] = "${file}" points outside the folder`);
    map.set(name, file);
  }
  if (map.size === 0) fail('INDEX_INVALID', fileName, 'weight_map is empty');
  return map;
}

/** The distinct shard files of an index, in first-seen order. */
export const shardFiles = (index: Map<string, string>): string[] => [...new Set(index.values())];
