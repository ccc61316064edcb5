// Compute pipelines and their bind group layouts, one per program key and entry point, made at a program's
// first dispatch. Made with createComputePipelineAsync by default (the browser compiles them in parallel,
// off the thread that records); the Gpu defers the work that needs a pipeline not made yet (deferred.ts).

import { GpuError } from './errors.ts';
import type { Dispatch, Program } from './program.ts';

/** A pipeline and its layout; `pipeline` is null while createComputePipelineAsync makes it. */
export interface PipelineEntry {
  pipeline: GPUComputePipeline | null;
  layout: GPUBindGroupLayout;
}

/** A pipeline as data: what a later session needs to make it again before its first dispatch (prepare). */
export interface PipelineRecipe {
  key: string;
  entryPoint: string;
  code: string;
  layout: GPUBindGroupLayoutEntry[];
}

/** A program's pipeline entry and its number in bind-group keys. */
export interface ProgramInfo {
  p: PipelineEntry;
  id: number;
}

/**
 * The bind group layout of a dispatch: its uniform block (binding 0, dynamic offset) if it has uniforms and
 * the storage bindings it passes, typed as `code` declares them (var<storage, read> or var<storage, read_write>).
 * 'auto' layouts cannot have dynamic offsets; like them, this one holds the bindings the entry point uses,
 * which are the ones its launcher passes (an 'auto' layout refuses any other).
 */
export function layoutEntries(code: string, d: Pick<Dispatch, 'bindings' | 'uniforms'>, what: string): GPUBindGroupLayoutEntry[] {
  const declared = new Map<number, string>();
  for (const m of code.matchAll(/@group\(0\)\s*@binding\((\d+)\)\s*var\s*<\s*(\w+)\s*(?:,\s*(\w+)\s*)?>/g)) {
    declared.set(Number(m[1]), m[2] === 'uniform' ? 'uniform' : m[3] === 'read_write' ? 'storage' : 'read-only-storage');
  }
  const COMPUTE = 0x4; // GPUShaderStage.COMPUTE (absent before init in Node)
  const entries: GPUBindGroupLayoutEntry[] = [];
  if (d.uniforms) {
    if (declared.get(0) !== 'uniform')
      throw new GpuError('VALIDATION', `${what}: uniforms passed, but binding 0 is not declared var<uniform>`);
    entries.push({ binding: 0, visibility: COMPUTE, buffer: { type: 'uniform', hasDynamicOffset: true } });
  }
  d.bindings.forEach((b, i) => {
    if (!b) return;
    const type = declared.get(i + 1);
    if (type !== 'storage' && type !== 'read-only-storage')
      throw new GpuError('VALIDATION', `${what}: binding ${i + 1} is passed but not declared as var<storage>`);
    entries.push({ binding: i + 1, visibility: COMPUTE, buffer: { type } });
  });
  return entries;
}

export class Pipelines {
  /**
   * True: made asynchronously, the work that needs one waiting until the next wait point. False: made
   * synchronously at first use, as createComputePipeline does (the same numbers).
   */
  async = true;
  /** Prints generated WGSL when a pipeline is made (STYLE: a debug flag). */
  debugShaders = false;
  /** Pipelines asked for and made so far (the lab's "preparing kernels n/N"). */
  asked = 0;
  made = 0;
  /** Called as each asynchronously made pipeline is ready. */
  onMade: ((made: number, asked: number) => void) | null = null;

  private readonly byKey = new Map<string, PipelineEntry>();
  /** By Program object (launchers keep one object per key): a property lookup per dispatch, not a key string. */
  private readonly byProgram = new WeakMap<Program, ProgramInfo>();
  private readonly making = new Set<Promise<void>>();
  /** What each pipeline made here was made from (recipes()). */
  private readonly recipesByKey = new Map<string, PipelineRecipe>();
  /** Pipelines made from recipes before a dispatch asked for them (prepare()). */
  private readonly prepared = new Map<string, { recipe: PipelineRecipe; entry: PipelineEntry }>();
  private nextId = 1;

  /** onError: where a pipeline's creation error goes (the Gpu raises it at its next wait point). */
  constructor(
    private readonly device: GPUDevice,
    private readonly onError: (message: string) => void,
  ) {}

  /**
   * The program's pipeline entry, made at its first dispatch with the layout of the bindings `d` passes.
   * sync: make it synchronously even when `async` is on (profiling times each dispatch as it is recorded).
   */
  get(program: Program, d: Dispatch, sync: boolean): ProgramInfo {
    const cached = this.byProgram.get(program);
    if (cached) return cached;
    const key = `${program.key}#${program.entryPoint}`;
    let p = this.byKey.get(key);
    if (!p) {
      p = this.make(key, program, d, sync);
      this.byKey.set(key, p);
    }
    const info = { p, id: this.nextId++ };
    this.byProgram.set(program, info);
    return info;
  }

  private make(key: string, program: Program, d: Dispatch, sync: boolean): PipelineEntry {
    const code = program.code();
    if (this.debugShaders) console.log(`// ---- ${key}\n${code}`);
    const layout = layoutEntries(code, d, key);
    const recipe: PipelineRecipe = { key: program.key, entryPoint: program.entryPoint, code, layout };
    this.recipesByKey.set(key, recipe);
    const pre = this.prepared.get(key);
    this.prepared.delete(key);
    // a prepared pipeline serves only the same WGSL and layout (a cache from an older build may differ)
    const same = pre && pre.recipe.code === code && JSON.stringify(pre.recipe.layout) === JSON.stringify(layout);
    if (pre && same && !(sync && pre.entry.pipeline === null)) return pre.entry;
    return this.create(key, recipe, sync, (message) => this.onError(message));
  }

  /** Makes a pipeline from its recipe; `fail` gets a creation error. */
  private create(key: string, r: PipelineRecipe, sync: boolean, fail: (message: string) => void): PipelineEntry {
    const layout = this.device.createBindGroupLayout({ entries: r.layout, label: key });
    this.device.pushErrorScope('validation');
    const module = this.device.createShaderModule({ code: r.code, label: r.key });
    const desc: GPUComputePipelineDescriptor = {
      layout: this.device.createPipelineLayout({ bindGroupLayouts: [layout], label: key }),
      compute: { module, entryPoint: r.entryPoint },
      label: key,
    };
    const entry: PipelineEntry = { pipeline: null, layout };
    this.asked++;
    if (this.async && !sync) {
      const making: Promise<void> = this.device
        .createComputePipelineAsync(desc)
        .then(
          (pipeline) => {
            entry.pipeline = pipeline;
            this.made++;
            this.onMade?.(this.made, this.asked);
          },
          (err: Error) => fail(`pipeline ${key}: ${err.message}`),
        )
        .finally(() => this.making.delete(making));
      this.making.add(making);
    } else {
      entry.pipeline = this.device.createComputePipeline(desc);
      this.made++;
    }
    void this.device.popErrorScope().then((err) => {
      if (err) fail(`pipeline ${key}: ${err.message}`);
    });
    return entry;
  }

  /** The recipes of the pipelines made (or being made) for dispatches here: a kernel cache keeps them for a later session. */
  recipes(): PipelineRecipe[] {
    return [...this.recipesByKey.values()];
  }

  /**
   * Starts making the recipes' pipelines, asynchronously and in parallel, before any dispatch asks for them
   * (the lab does it while the model loads); a dispatch whose program has the same WGSL and layout takes
   * its pipeline. A recipe that fails to compile (from another build) is dropped quietly. Returns how many
   * were started.
   */
  prepare(recipes: readonly PipelineRecipe[]): number {
    let started = 0;
    for (const r of recipes) {
      const key = `${r.key}#${r.entryPoint}`;
      if (this.byKey.has(key) || this.prepared.has(key)) continue;
      const entry = this.create(key, r, false, () => this.prepared.delete(key));
      this.prepared.set(key, { recipe: r, entry });
      started++;
    }
    return started;
  }

  /** Resolves once every pipeline asked for is made or has failed, including those asked for meanwhile. */
  async settled(): Promise<void> {
    while (this.making.size) await Promise.all(this.making);
  }

  get size(): number {
    return this.byKey.size;
  }
}
