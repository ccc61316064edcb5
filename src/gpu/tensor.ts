// Tensors: a GPU buffer with a shape and a dtype. 16-bit floats (bf16, f16) are stored packed two per
// u32 word, element i in the low half of word i/2 when i is even, because `shader-f16` is missing on
// NVIDIA under Vulkan and on SwiftShader; kernels unpack them to f32.

export type DType = 'f32' | 'i32' | 'u32' | 'bf16' | 'f16';

export interface Tensor {
  readonly buffer: GPUBuffer;
  readonly shape: readonly number[];
  readonly dtype: DType;
  /** Set for tensors that came from the pool, so release() can return them. */
  readonly pooled?: boolean;
  readonly label: string;
}

export const numel = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** Bytes a tensor of this shape needs, rounded up to whole 4-byte words (WebGPU binds multiples of 4). */
export function byteSize(shape: readonly number[], dtype: DType): number {
  const n = numel(shape);
  const bytes = dtype === 'bf16' || dtype === 'f16' ? Math.ceil(n / 2) * 4 : n * 4;
  return Math.max(4, bytes);
}

export const is16 = (d: DType): d is 'bf16' | 'f16' => d === 'bf16' || d === 'f16';

export const shapeStr = (t: { shape: readonly number[]; dtype?: DType }): string =>
  `[${t.shape.join(', ')}]${t.dtype ? ` ${t.dtype}` : ''}`;

/** The same buffer seen with another shape of equal size (not pooled: release the original, not the view). */
export function view(t: Tensor, shape: readonly number[]): Tensor {
  if (numel(shape) !== numel(t.shape))
    throw new Error(`view of ${t.label}: [${t.shape.join(', ')}] cannot be seen as [${shape.join(', ')}]`);
  return { buffer: t.buffer, shape: [...shape], dtype: t.dtype, pooled: false, label: t.label };
}
