// Work recorded while a pipeline is still being made (Pipelines.async): the commands wait here, in order,
// and are encoded at the next wait point once every pipeline they use is ready. A command is what the Gpu
// would have encoded at once: a dispatch (its pipeline entry, filled in when made), a buffer copy or clear,
// or a queue write (its bytes copied, since the caller may reuse them).

/** A dispatch; `p.pipeline` is null until the pipeline is made. offset: the uniform block's, -1 for none. */
export interface DispatchOp {
  kind: 'dispatch';
  p: { pipeline: GPUComputePipeline | null };
  bindGroup: GPUBindGroup;
  offset: number;
  x: number;
  y: number;
  z: number;
}

export type DeferredOp =
  | DispatchOp
  | { kind: 'copy'; src: GPUBuffer; srcOffset: number; dst: GPUBuffer; dstOffset: number; bytes: number }
  | { kind: 'clear'; buffer: GPUBuffer; bytes: number }
  | { kind: 'write'; buffer: GPUBuffer; offset: number; data: Uint8Array<ArrayBuffer> };

/** The bytes of a view, copied (a deferred write must not see later changes to the caller's array). */
export const copyBytes = (v: ArrayBufferView, bytes: number): Uint8Array<ArrayBuffer> =>
  new Uint8Array(v.buffer, v.byteOffset, bytes).slice();
