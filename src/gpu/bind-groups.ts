// Uniform blocks and bind groups, cached so that a dispatch seen before costs no GPU object creation.
//
// Uniform blocks live in arenas of UNIFORM_BLOCKS blocks of UNIFORM_BLOCK bytes (WebGPU's largest allowed
// minUniformBufferOffsetAlignment, so any device takes the offsets), one block per distinct value, written once,
// and a dispatch binds its block with a dynamic offset: a bind group then depends on the dispatch's storage
// buffers only. With a uniform buffer per value every new shape (each micro-batch of the update has its own)
// made new bind groups for all its dispatches, and creating bind groups was the update's largest CPU cost.

import { GpuError } from './errors.ts';
import { IntKeyCache, intKeyHash } from './int-key-cache.ts';
import type { ProgramInfo } from './pipelines.ts';
import { type Dispatch, encodeUniformsInto } from './program.ts';

export const UNIFORM_BLOCK = 256;
const UNIFORM_BLOCKS = 4096;
const UNIFORM = 0x40 | 0x08; // UNIFORM | COPY_DST (GPUBufferUsage is absent before init in Node)

/** A buffer's number in bind-group keys, kept on the buffer object: a property read, not a WeakMap lookup. */
const BUFFER_ID = Symbol('marft.bufferId');
type NumberedBuffer = GPUBuffer & { [BUFFER_ID]?: number };

/** Words of the scratch keys: a uniform block's words, or a bind group's program, uniform and binding ids. */
const KEY_WORDS = 64;

export interface UniformBlock {
  arena: GPUBuffer;
  offset: number;
}

export class BindGroups {
  /** Uniform blocks by their words; bind groups by program, arena and storage buffer ids (no key strings). */
  private readonly blocks = new IntKeyCache<UniformBlock>(UNIFORM_BLOCKS);
  private readonly groups = new IntKeyCache<GPUBindGroup>(8192);
  /** The arena new uniform blocks go to, and its next free offset. */
  private arena: GPUBuffer | null = null;
  private arenaUsed = 0;
  /** Each dispatch's uniform words (views of one block) and bind-group key are built here. */
  private readonly words = new Uint32Array(KEY_WORDS);
  private readonly wordsI = new Int32Array(this.words.buffer);
  private readonly wordsF = new Float32Array(this.words.buffer);
  private readonly key = new Uint32Array(KEY_WORDS);
  private nextId = 1;

  constructor(private readonly device: GPUDevice) {}

  /**
   * The uniform block holding these fields' words: one per distinct words, written once and never changed
   * (commands recorded earlier never use a new block, so writing it before they are submitted is safe).
   */
  uniformBlock(fields: NonNullable<Dispatch['uniforms']>): UniformBlock {
    const u = this.words;
    const n = encodeUniformsInto(fields, u, this.wordsI, this.wordsF);
    const h = intKeyHash(u, n);
    let block = this.blocks.get(u, n, h);
    if (!block) {
      if (!this.arena || this.arenaUsed + UNIFORM_BLOCK > this.arena.size) {
        // a full arena is left to the GC, not destroyed: cached bind groups, recordings and pending passes may use it
        this.arena = this.device.createBuffer({ size: UNIFORM_BLOCK * UNIFORM_BLOCKS, usage: UNIFORM, label: 'uniforms' });
        this.arenaUsed = 0;
      }
      block = { arena: this.arena, offset: this.arenaUsed };
      this.arenaUsed += UNIFORM_BLOCK;
      this.device.queue.writeBuffer(block.arena, block.offset, u, 0, n);
      this.blocks.set(u, n, h, block);
    }
    return block;
  }

  /**
   * The bind group of a dispatch, cached by its program, uniform arena and storage buffers (ids). A buffer
   * keeps its id while the pool hands it out again, so its bind groups stay valid (they name the buffer, not
   * the tensor); a destroyed buffer's are never asked for again (a new buffer gets a new id).
   */
  bindGroup(d: Dispatch, program: ProgramInfo, arena: GPUBuffer | null): GPUBindGroup {
    const bs = d.bindings;
    const key = this.key;
    const n = bs.length + 2;
    if (n > key.length)
      throw new GpuError('LIMIT', `${d.program.key}: ${bs.length} bindings, more than the ${key.length - 2} a dispatch may have here`);
    key[0] = program.id;
    key[1] = arena ? this.bufferId(arena) : 0;
    for (let i = 0; i < bs.length; i++) {
      const b = bs[i];
      key[i + 2] = b ? this.bufferId('buffer' in b ? b.buffer : b) : 0;
    }
    const h = intKeyHash(key, n);
    let bg = this.groups.get(key, n, h);
    if (!bg) {
      const entries: GPUBindGroupEntry[] = [];
      if (arena) entries.push({ binding: 0, resource: { buffer: arena, offset: 0, size: UNIFORM_BLOCK } });
      bs.forEach((b, i) => {
        if (b) entries.push({ binding: i + 1, resource: { buffer: 'buffer' in b ? b.buffer : b } });
      });
      bg = this.device.createBindGroup({ layout: program.p.layout, entries, label: d.program.key });
      this.groups.set(key, n, h, bg);
    }
    return bg;
  }

  get sizes(): { uniformBlocks: number; bindGroups: number } {
    return { uniformBlocks: this.blocks.size, bindGroups: this.groups.size };
  }

  private bufferId(b: GPUBuffer): number {
    return ((b as NumberedBuffer)[BUFFER_ID] ??= this.nextId++);
  }
}
