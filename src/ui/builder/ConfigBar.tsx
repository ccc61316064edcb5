// The builder's config lifecycle bar: undo/redo, the preset runs (each with one line), export/import of
// the run-config JSON, the share link; and, while a run is live, the notice that the builder shows that
// run's own config (read-only) with "edit a copy", or that it holds a copy whose edits go to a new run.

import { useEffect, useState } from 'react';
import { loadPresetRun } from '../actions.ts';
import {
  backToRunConfig,
  configLink,
  editCopy,
  exportConfig,
  importConfig,
  onUndoKey,
  redoBuilder,
  undoBuilder,
} from '../config-actions.ts';
import { PRESET_RUN_CHOICES } from '../defaults.ts';
import { selectBuilderLocked, selectCanRedo, selectCanUndo, selectCopyOf, selectRun, useLab } from '../store.ts';

export function RunConfigNotice() {
  const locked = useLab(selectBuilderLocked);
  const copyOf = useLab(selectCopyOf);
  const run = useLab(selectRun);
  if (locked) {
    return (
      <section className="card run-config-notice" data-testid="run-config-locked" role="status">
        <p>
          This is the config of run <strong>{run.runId}</strong> ({run.status}): read-only, because Continue and Step train the run with
          exactly these settings.
        </p>
        <button type="button" data-testid="edit-copy" onClick={editCopy}>
          Edit a copy
        </button>
      </section>
    );
  }
  if (copyOf !== null && copyOf === run.runId) {
    return (
      <section className="card run-config-notice" data-testid="run-config-copy" role="status">
        <p>
          You are editing a copy of run <strong>{copyOf}</strong>'s config. Continue and Step keep training that run with its own config;{' '}
          <strong>New run</strong> trains this copy.
        </p>
        <button type="button" data-testid="back-to-run-config" onClick={backToRunConfig}>
          Back to the run's config
        </button>
      </section>
    );
  }
  return null;
}

export function ConfigBar() {
  const canUndo = useLab(selectCanUndo);
  const canRedo = useLab(selectCanRedo);
  const locked = useLab(selectBuilderLocked);
  const [link, setLink] = useState<string | null>(null);
  const [presetRun, setPresetRun] = useState('');
  useEffect(() => {
    window.addEventListener('keydown', onUndoKey);
    return () => window.removeEventListener('keydown', onUndoKey);
  }, []);
  const share = () => {
    const l = configLink();
    setLink(l);
    if (l) void navigator.clipboard?.writeText(l).catch(() => {});
  };
  const chosen = PRESET_RUN_CHOICES.find((c) => c.name === presetRun);
  return (
    <section className="card config-bar" data-testid="config-bar">
      <div className="row">
        <button type="button" data-testid="undo" disabled={!canUndo || locked} onClick={undoBuilder} title="Undo (Ctrl/Cmd+Z)">
          ↶ Undo
        </button>
        <button type="button" data-testid="redo" disabled={!canRedo || locked} onClick={redoBuilder} title="Redo (Shift+Ctrl/Cmd+Z)">
          ↷ Redo
        </button>
        <label className="field">
          <span>Preset run</span>
          <select
            data-testid="preset-run-select"
            value={presetRun}
            disabled={locked}
            onChange={(e) => {
              setPresetRun(e.target.value);
              if (e.target.value) loadPresetRun(e.target.value);
            }}
          >
            <option value="">choose a preset run…</option>
            {PRESET_RUN_CHOICES.map((c) => (
              <option key={c.name} value={c.name} title={c.line}>
                {c.name}: {c.line}
              </option>
            ))}
          </select>
        </label>
        <button
          type="button"
          data-testid="export-config"
          onClick={exportConfig}
          title="the CLI runs it: marft train --config marft-config.json"
        >
          Export JSON
        </button>
        <label className={`button${locked ? ' disabled' : ''}`}>
          Import JSON
          <input
            type="file"
            accept=".json,application/json"
            data-testid="import-config"
            className="sr-only"
            disabled={locked}
            onChange={(e) => {
              const f = e.target.files?.[0];
              e.target.value = '';
              if (f) void importConfig(f);
            }}
          />
        </label>
        <button type="button" data-testid="share-config" onClick={share}>
          Share link
        </button>
      </div>
      {chosen && (
        <p className="hint" data-testid="preset-run-line">
          {chosen.name}: {chosen.line} (also <code>/?config={chosen.name}</code>, <code>configs/{chosen.name}.json</code>)
        </p>
      )}
      {link && (
        <label className="field wide">
          <span>Link to this config (copied to the clipboard when the browser allows it)</span>
          <input type="text" readOnly value={link} data-testid="share-link" onFocus={(e) => e.target.select()} />
        </label>
      )}
    </section>
  );
}
