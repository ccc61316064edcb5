// The base model: the built-in tiny model (served with the app), a local Hugging Face folder the user
// picks (copied into the browser's storage, so a resumed run finds it again), one downloaded from the
// Hugging Face Hub (HubPicker, opt-in), or one kept earlier.

import { chooseModel, importModelFolder } from '../actions.ts';
import { selectDraft, selectLocalModels, selectModel, useLab } from '../store.ts';
import { ErrorBox } from '../Notices.tsx';
import { fieldHelp } from './help.ts';
import { HubPicker } from './HubPicker.tsx';

const mib = (b: number) => `${(b / 2 ** 20).toFixed(b < 2 ** 20 ? 2 : 0)} MiB`;

export function ModelPicker() {
  const path = useLab(selectDraft).model.path;
  const model = useLab(selectModel);
  const local = useLab(selectLocalModels);
  const kernels = useLab((s) => s.kernels);
  return (
    <section className="card" data-testid="model-picker">
      <h2 id="model-picker-title">Base model</h2>
      <div className="row">
        <select
          value={path}
          data-testid="model-select"
          aria-labelledby="model-picker-title"
          title={fieldHelp('model.path')?.text}
          onChange={(e) => void chooseModel(e.target.value)}
        >
          <option value="">built-in: marft-tiny</option>
          {local.map((p) => (
            <option key={p} value={p}>
              local: {p.replace('opfs:models/', '')}
            </option>
          ))}
        </select>
        <label className="button">
          Pick a Hugging Face folder…
          <input
            type="file"
            data-testid="model-folder"
            className="sr-only"
            ref={(el) => {
              if (el) el.setAttribute('webkitdirectory', '');
            }}
            onChange={(e) => {
              const f = e.target.files;
              if (f?.length) void importModelFolder(Array.from(f));
              e.target.value = '';
            }}
          />
        </label>
        {model.status === 'idle' && (
          <button type="button" onClick={() => void chooseModel(path)}>
            Check model
          </button>
        )}
      </div>
      {model.status === 'loading' && (
        <p className="hint" data-testid="model-status" data-state="loading">
          Loading the model…
        </p>
      )}
      {model.status === 'ready' && model.info && (
        <p data-testid="model-status" data-state="ready" data-kernels-prepared={model.info.kernelsPrepared}>
          {model.info.name}: {model.info.modelType}, {model.info.numLayers} layers, hidden {model.info.hiddenSize}, vocab{' '}
          {model.info.vocabSize}, context {model.info.maxPositions}, weights {mib(model.info.bytes)}
          {model.info.hasChatTemplate ? ', chat template' : ', no chat template'}
          {model.info.kernelsPrepared > 0 ? `; ${model.info.kernelsPrepared} kernels from earlier runs prepared` : ''}
        </p>
      )}
      {model.status === 'ready' && kernels.status !== 'idle' && (
        <p
          className="hint"
          data-testid="kernels-status"
          data-state={kernels.status}
          data-made={kernels.made}
          data-seconds={kernels.seconds ?? ''}
        >
          {kernels.status === 'preparing'
            ? `Preparing kernels for the first iteration${kernels.asked > 0 ? ` ${kernels.made}/${kernels.asked}` : ''}…`
            : `${kernels.made} kernels prepared for the first iteration${kernels.seconds !== null ? ` in ${kernels.seconds.toFixed(1)} s` : ''}.`}
        </p>
      )}
      {model.status === 'error' && model.error && <ErrorBox error={model.error} testid="model-error" />}
      <HubPicker />
      <p className="hint">
        Llama, Qwen2 and SmolLM-family folders with safetensors weights and tokenizer.json. A picked or downloaded model is kept in this
        browser's storage.
      </p>
    </section>
  );
}
