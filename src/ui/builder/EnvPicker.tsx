// The environment: a built-in task generator, the user's own JSON/JSONL of {problem, answer}, the code
// environment (built-in tasks or the user's JSONL of functions to write), or the user's own environment
// module (ModuleEditor).

import { DEFAULT_PRECEDENCE, DEFAULT_TRAP, listEnvs } from '../../config/envs.ts';
import { uploadDataset } from '../actions.ts';
import { useMemo } from 'react';
import { editDraft, selectDatasetRejected, selectDraft, useLab } from '../store.ts';
import { ErrorBox } from '../Notices.tsx';
import { DatasetPreview, readDataset } from './DatasetPreview.tsx';
import { FieldIssues, Label, NumberField } from './fields.tsx';
import { MODULE_ENV, startFromTemplate } from './module-actions.ts';
import { ModuleEditor } from './ModuleEditor.tsx';

const ENVS = listEnvs();

/** A numeric option of a built-in environment (env.options[name]); empty removes it, so the default applies. */
function EnvNumberOption({ name, label, step, title }: { name: string; label: string; step: number; title?: string }) {
  const value = useLab(selectDraft).env.options[name];
  return (
    <NumberField
      label={label}
      path={`env.options.${name}`}
      helpPath="env.options"
      step={step}
      value={typeof value === 'number' ? value : null}
      title={title}
      onChange={(v) =>
        editDraft((d) => {
          if (Number.isFinite(v)) d.env.options[name] = v;
          else delete d.env.options[name];
        })
      }
    />
  );
}

export function EnvPicker() {
  const env = useLab(selectDraft).env;
  const rejected = useLab(selectDatasetRejected);
  // the dataset in use is the one the config carries (an upload, an imported or restored config, a loaded run's): previewed from it
  const data = typeof env.options.data === 'string' ? env.options.data : null;
  const source = typeof env.options.source === 'string' ? env.options.source : "the config's dataset";
  const kind = env.name === 'code' ? 'code' : 'dataset';
  const inUse = useMemo(() => (data === null ? null : readDataset(data, source, kind)), [data, source, kind]);
  const isModule = env.moduleSource !== undefined || env.module !== undefined;
  return (
    <section className="card" data-testid="env-picker">
      <h2>Environment</h2>
      <label className="field wide">
        <Label label="Tasks" path="env.name" />
        <select
          value={isModule ? MODULE_ENV : env.name}
          data-testid="env-select"
          onChange={(e) => {
            if (e.target.value === MODULE_ENV) startFromTemplate();
            else
              editDraft((d) => {
                d.env = { name: e.target.value, options: e.target.value === 'dataset' ? d.env.options : {} };
              });
          }}
        >
          {ENVS.map((e) => (
            <option key={e.name} value={e.name}>
              {e.name}
            </option>
          ))}
          <option value={MODULE_ENV}>your module (JavaScript)</option>
        </select>
      </label>
      <p className="hint">
        {isModule
          ? 'Your own environment: an ES module whose default export is a factory (options) => env, run sandboxed in a worker (no network, DOM or storage; a time limit per call). Its source is kept with the run.'
          : ENVS.find((e) => e.name === env.name)?.description}
      </p>
      {isModule && <ModuleEditor />}
      {!isModule && env.name !== 'dataset' && env.name !== 'code' && (
        <EnvNumberOption name="difficulty" label={`Difficulty (${env.name === 'coop-plan' ? '2..4' : '1..4'}, empty = default)`} step={1} />
      )}
      {!isModule && env.name === 'coop-arith' && (
        <EnvNumberOption
          name="precedence"
          label={`Precedence share (0..1, empty = ${DEFAULT_PRECEDENCE})`}
          step={0.05}
          title="Of the multi-step expressions, the share where reading left to right is wrong: the problems a planner helps with."
        />
      )}
      {!isModule && env.name === 'coop-plan' && (
        <EnvNumberOption
          name="trap"
          label={`Trap share (0..1, empty = ${DEFAULT_TRAP})`}
          step={0.05}
          title="The share of problems where reading left to right is wrong: a left-to-right plan fails the plan check there."
        />
      )}
      {!isModule && (env.name === 'dataset' || env.name === 'code') && (
        <div>
          <label className="button">
            Upload JSON / JSONL…
            <input
              type="file"
              accept=".json,.jsonl,application/json"
              className="sr-only"
              data-testid="dataset-file"
              onChange={(e) => {
                const f = e.target.files?.[0];
                if (f) void uploadDataset(f, env.name === 'code' ? 'code' : 'dataset');
                e.target.value = '';
              }}
            />
          </label>
          {inUse && !inUse.error && <DatasetPreview dataset={inUse} inUse />}
          {inUse?.error && (
            <ErrorBox error={inUse.error} testid="dataset-in-use-error" context={`reading ${source}, the dataset in the config`} />
          )}
          {!inUse && env.name === 'code' && <p>the built-in tasks</p>}
          {rejected && (
            <ErrorBox
              error={rejected.error}
              testid="dataset-error"
              context={`reading ${rejected.name}${inUse && !inUse.error ? `; it was not used, the environment keeps ${inUse.name}` : ''}`}
            />
          )}
          <p className="hint">
            {env.name === 'code' ? (
              <>
                Optional, one task per line (JSONL):{' '}
                {'{"prompt": "Write square(x).", "entryPoint": "square", "tests": [{"input": [3], "output": 9}]}'}
              </>
            ) : (
              <>One record per line (JSONL) or an array: {'{"problem": "What is 2+3?", "answer": "5"}'}</>
            )}
          </p>
        </div>
      )}
      <FieldIssues path="env" />
    </section>
  );
}
