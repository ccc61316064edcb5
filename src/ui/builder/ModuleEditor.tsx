// The Build tab's editor for a user's environment module: load a file or start from the template, edit it
// in place (the static checks' problems show under the editor at once; a real syntax error, with its line,
// as soon as the sandbox has read it: the panel re-tries the module a moment after each edit), its options
// as JSON, and a "try it" panel: the task of each seed and what one step returns for a typed answer.

import { useEffect, useRef, useState } from 'react';
import { editDraft, selectDraft, useLab } from '../store.ts';
import { ErrorBox } from '../Notices.tsx';
import { FieldIssues } from './fields.tsx';
import { type TryOutcome, loadModuleFile, parseSeeds, setModuleSource, startFromTemplate, tryDraftModule } from './module-actions.ts';

/** Milliseconds after the last edit before the module is tried again. */
const RETRY_MS = 700;

function Outcome({ outcome }: { outcome: TryOutcome }) {
  if (!outcome.ok) return <ErrorBox error={outcome.error} testid="module-try-error" context="trying the module" />;
  const r = outcome.report;
  return (
    <div data-testid="module-try-report">
      {r.name && (
        <p className="hint">
          env "{r.name}", horizon {r.horizon}
        </p>
      )}
      <ul className="module-try">
        {r.seeds.map((s) => (
          <li key={s.seed} data-testid="module-try-seed">
            <strong>seed {s.seed}</strong>: {s.task}
            {s.steps.map((st, i) => (
              <div key={i} className="hint">
                step → reward <b data-testid="module-try-reward">{st.result.teamReward}</b>, {st.result.correct ? 'correct' : 'not correct'}
                , {st.result.done ? 'done' : 'not done'}
                {st.result.feedback ? <>, feedback “{st.result.feedback}”</> : null}
              </div>
            ))}
            {s.deterministic && <div className="hint">same results when replayed</div>}
          </li>
        ))}
      </ul>
      {r.error && <ErrorBox error={r.error} testid="module-try-error" />}
    </div>
  );
}

export function ModuleEditor() {
  const env = useLab(selectDraft).env;
  const source = env.moduleSource ?? '';
  const [seedsText, setSeedsText] = useState('0, 1, 2');
  const [answer, setAnswer] = useState('\\boxed{8}');
  const [optionsText, setOptionsText] = useState(() => JSON.stringify(env.options));
  const [optionsError, setOptionsError] = useState<string | null>(null);
  const [outcome, setOutcome] = useState<TryOutcome | null>(null);
  const [busy, setBusy] = useState(false);
  const request = useRef(0);
  const seeds = parseSeeds(seedsText);

  const tryIt = async (): Promise<void> => {
    if (!seeds || !source.trim()) return;
    const n = ++request.current;
    setBusy(true);
    const o = await tryDraftModule(seeds, answer);
    if (n !== request.current) return; // a later try (or edit) wins
    setOutcome(o);
    setBusy(false);
  };

  useEffect(() => {
    if (!source.trim()) return;
    const t = setTimeout(() => {
      void tryIt();
    }, RETRY_MS);
    return () => clearTimeout(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps -- re-try on edits of the module and its options only
  }, [source, JSON.stringify(env.options)]);

  const syntax = outcome && !outcome.ok ? null : outcome?.report.error?.code === 'ENV_MODULE_SYNTAX' ? outcome.report.error : null;
  return (
    <div className="module-editor" data-testid="module-editor">
      <div className="row">
        <label className="button">
          Load a module (.mjs / .js)…
          <input
            type="file"
            accept=".mjs,.js,text/javascript"
            className="sr-only"
            data-testid="module-file"
            onChange={(e) => {
              const f = e.target.files?.[0];
              if (f) void loadModuleFile(f);
              e.target.value = '';
            }}
          />
        </label>
        <button type="button" onClick={startFromTemplate} data-testid="module-template">
          Start from the template
        </button>
        {env.module && <span className="hint">{env.module}</span>}
      </div>
      <textarea
        className="code"
        spellCheck={false}
        rows={18}
        value={source}
        data-testid="module-source"
        aria-invalid={syntax ? true : undefined}
        onChange={(e) => setModuleSource(e.target.value)}
      />
      <FieldIssues path="env.moduleSource" />
      {syntax && <ErrorBox error={syntax} testid="module-syntax-error" />}
      <label className="field wide">
        <span>Options (JSON, passed to the factory with the horizon)</span>
        <input
          value={optionsText}
          data-testid="module-options"
          onChange={(e) => {
            setOptionsText(e.target.value);
            try {
              const v = JSON.parse(e.target.value || '{}') as unknown;
              if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('give a JSON object');
              setOptionsError(null);
              editDraft((d) => {
                d.env.options = v as Record<string, unknown>;
              });
            } catch (err) {
              setOptionsError((err as Error).message);
            }
          }}
        />
      </label>
      {optionsError && <p className="issues">options: {optionsError}</p>}
      <fieldset className="module-try-panel">
        <legend>Try it</legend>
        <label className="field">
          <span>Seeds</span>
          <input value={seedsText} data-testid="module-seeds" onChange={(e) => setSeedsText(e.target.value)} />
        </label>
        <label className="field wide">
          <span>Answer (every agent says this)</span>
          <input value={answer} data-testid="module-answer" onChange={(e) => setAnswer(e.target.value)} />
        </label>
        <button type="button" disabled={!seeds || !source.trim() || busy} onClick={() => void tryIt()} data-testid="module-try">
          {busy ? 'Trying…' : 'Try it'}
        </button>
        {!seeds && <p className="issues">seeds: up to 16 non-negative integers, e.g. 0, 1, 2</p>}
        {outcome && <Outcome outcome={outcome} />}
      </fieldset>
    </div>
  );
}
