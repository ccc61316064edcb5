// The Build tab: the config lifecycle bar, preset, agent graph and profiles, model, environment,
// algorithm. A live run's config is shown read-only (the fieldset disables every control).

import { choosePreset } from '../actions.ts';
import { PRESET_CHOICES } from '../defaults.ts';
import { selectBuilderLocked, selectIssues, selectPreset, useLab } from '../store.ts';
import { AlgoSettings } from './AlgoSettings.tsx';
import { ConfigBar, RunConfigNotice } from './ConfigBar.tsx';
import { EnvPicker } from './EnvPicker.tsx';
import { GraphEditor } from './GraphEditor.tsx';
import { ModelPicker } from './ModelPicker.tsx';
import { ProfileEditor } from './ProfileEditor.tsx';

export function Builder() {
  const preset = useLab(selectPreset);
  const issues = useLab(selectIssues);
  const locked = useLab(selectBuilderLocked);
  return (
    <div className="builder">
      <ConfigBar />
      <RunConfigNotice />
      <fieldset className="builder-body" disabled={locked} data-testid="builder-body">
        <section className="card row spread">
          <label className="field">
            <span>Preset team</span>
            <select data-testid="preset-select" value={preset} onChange={(e) => choosePreset(e.target.value)}>
              {!PRESET_CHOICES.some((c) => c.id === preset) && <option value={preset}>custom</option>}
              {PRESET_CHOICES.map((c) => (
                <option key={c.id} value={c.id}>
                  {c.label}
                </option>
              ))}
            </select>
          </label>
          <p data-testid="config-status" data-valid={String(issues.length === 0)} className={issues.length ? 'bad-text' : 'ok-text'}>
            {issues.length
              ? `${issues.length} problem${issues.length > 1 ? 's' : ''} to fix before training`
              : 'Config valid: ready to train'}
          </p>
        </section>
        <div className="two-col">
          <GraphEditor />
          <ProfileEditor />
        </div>
        <div className="two-col">
          <ModelPicker />
          <EnvPicker />
        </div>
        <AlgoSettings />
      </fieldset>
    </div>
  );
}
