export { Gpu, type AdapterSummary } from './context.ts';
export { acquireFrom, type AcquireOptions } from './device.ts';
export { GpuError, shapeError, type GpuErrorCode } from './errors.ts';
export { pack16, unpack16, round16, toBf16Bits, fromBf16Bits, toF16Bits, fromF16Bits } from './half.ts';
export { BufferPool, bucketSize, type PoolStats } from './pool.ts';
export { encodeUniforms, grid1d, type Dispatch, type Program, type UniformField } from './program.ts';
export { byteSize, is16, numel, shapeStr, view, type DType, type Tensor } from './tensor.ts';
