// Conversions between f32 and the 16-bit formats (bf16, f16), packed two per u32 as the kernels read them.

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** f32 -> bf16 bits, round to nearest even (NaN stays NaN). */
export function toBf16Bits(x: number): number {
  f32[0] = x;
  const b = u32[0];
  if ((b & 0x7fffffff) > 0x7f800000) return 0x7fc0;
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}

export function fromBf16Bits(h: number): number {
  u32[0] = (h & 0xffff) << 16;
  return f32[0];
}

/** f32 -> IEEE half bits, round to nearest even, with subnormals and overflow to infinity. */
export function toF16Bits(x: number): number {
  f32[0] = x;
  const b = u32[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    let m = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    if (rest > half || (rest === half && m & 1)) m++;
    return sign | m;
  }
  let m = mant >>> 13;
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && m & 1)) {
    m++;
    if (m === 0x400) {
      m = 0;
      e++;
      if (e >= 0x1f) return sign | 0x7c00;
    }
  }
  return sign | (e << 10) | m;
}

export function fromF16Bits(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 0x1f) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Packs values as 16-bit floats, two per u32 word (element 2k in the low half). */
export function pack16(values: ArrayLike<number>, dtype: 'bf16' | 'f16'): Uint32Array {
  const enc = dtype === 'bf16' ? toBf16Bits : toF16Bits;
  const out = new Uint32Array(Math.max(1, Math.ceil(values.length / 2)));
  for (let i = 0; i < values.length; i++) out[i >> 1] |= enc(values[i]) << ((i & 1) * 16);
  return out;
}

export function unpack16(words: Uint32Array, n: number, dtype: 'bf16' | 'f16'): Float32Array {
  const dec = dtype === 'bf16' ? fromBf16Bits : fromF16Bits;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = dec((words[i >> 1] >>> ((i & 1) * 16)) & 0xffff);
  return out;
}

/** The value a 16-bit store would hold: what a reference should compute with. */
export function round16(values: ArrayLike<number>, dtype: 'bf16' | 'f16'): Float64Array {
  const enc = dtype === 'bf16' ? toBf16Bits : toF16Bits;
  const dec = dtype === 'bf16' ? fromBf16Bits : fromF16Bits;
  return Float64Array.from(values, (v) => dec(enc(v)));
}
