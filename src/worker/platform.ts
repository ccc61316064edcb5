// The engine's platform in the browser (src/marft/session.ts): the WebGPU device of this worker, base models
// from model-source.ts (the built-in model fetched from the app, or a local folder kept in OPFS) checked
// against the browser's memory limit, the worker's catalogue for a model the lab cannot use, and the
// browser's sandbox for users' environment modules.

import { acquireBrowserGpu } from '../gpu/browser.ts';
import type { LimitsMode } from '../gpu/device.ts';
import { opfsStore } from '../platform/storage/opfs.ts';
import { browserSandbox } from '../platform/sandbox/browser.ts';
import { BUILTIN_MODEL } from '../config/run-config.ts';
import type { Platform } from '../marft/session.ts';
import { WorkerFail } from './errors.ts';
import { type BuiltinModels, MAX_MODEL_BYTES, modelFilesFor, weightBytes } from './model-source.ts';

export const modelsBase = (): string => new URL(`${import.meta.env.BASE_URL}models/`, self.location.origin).href;

/**
 * The worker's platform; `builtins` fetches the built-in model once for the whole worker; `limits` says which
 * limits a device is opened with (the page's ?limits=default, page-params.ts).
 */
export const browserPlatform = (builtins: BuiltinModels, limits: () => LimitsMode): Platform => ({
  device: () => acquireBrowserGpu({ log: (l) => console.log(l), limits: limits() }),
  async model(path) {
    const files = await modelFilesFor(path, modelsBase(), builtins);
    const bytes = await weightBytes(files);
    if (bytes > MAX_MODEL_BYTES) {
      throw new WorkerFail(
        'MODEL_TOO_LARGE',
        `${files.name}: the weights are ${(bytes / 2 ** 30).toFixed(2)} GiB; the lab takes at most ${(MAX_MODEL_BYTES / 2 ** 30).toFixed(1)} GiB in the browser`,
      );
    }
    return { files, name: files.name, baseModel: path || BUILTIN_MODEL };
  },
  refuse: (code, message) => new WorkerFail(code, message),
  // users' environment modules and code candidates run in Blob-URL Workers of their own
  sandbox: browserSandbox,
  kernels: opfsStore('kernels'),
});
