// Form fields of the builder, each showing the validation issues of its config path in place and its
// help (the schema's description, a link to the paper's term where there is one). A field's edits are
// keyed by its path, so typing a value is one undo step.

import { useEffect, useState } from 'react';
import { issuesAt, selectIssues, useLab, withEditKey } from '../store.ts';
import { fieldHelp } from './help.ts';

/** The label text with the field's help: a "?" whose tooltip and accessible name are the description. */
export function Label({ label, path }: { label: string; path: string }) {
  const help = fieldHelp(path);
  return (
    <span>
      {label}
      {help && (
        <span
          className="help-icon"
          tabIndex={0}
          role="note"
          title={help.text}
          aria-label={`${label}: ${help.text}`}
          data-testid={`help-${path}`}
        >
          ?
        </span>
      )}
      {help?.paper && (
        <a
          className="paper-link"
          href={help.paper.url}
          target="_blank"
          rel="noreferrer"
          title={`MARFT paper: ${help.paper.term}`}
          data-testid={`paper-${path}`}
        >
          paper
        </a>
      )}
    </span>
  );
}

export function FieldIssues({ path, exact = false }: { path: string; exact?: boolean }) {
  const issues = useLab(selectIssues);
  const mine = exact ? issues.filter((i) => i.path === path) : issuesAt(issues, path);
  if (!mine.length) return null;
  return (
    <ul className="issues" data-testid={`issues-${path}`}>
      {mine.map((i) => (
        <li key={i.path + i.message}>{i.message}</li>
      ))}
    </ul>
  );
}

const invalid = (path: string) => (s: ReturnType<typeof useLab.getState>) => s.issues.some((i) => i.path === path);

interface NumberProps {
  label: string;
  path: string;
  value: number | null;
  onChange: (v: number) => void;
  step?: number | 'any';
  title?: string;
  testid?: string;
  /** The schema path of the help when `path` is not one (a field that sets several). */
  helpPath?: string;
}

/** A number input that keeps what the user types (e.g. "1e-") and hands the parsed number on (NaN when empty). */
export function NumberField({ label, path, value, onChange, step = 'any', title, testid, helpPath }: NumberProps) {
  const [text, setText] = useState(value === null ? '' : String(value));
  useEffect(() => {
    if (Number(text) !== value && !(text === '' && (value === null || Number.isNaN(value))))
      setText(value === null || Number.isNaN(value) ? '' : String(value));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [value]);
  const bad = useLab(invalid(path));
  return (
    <label className={`field${bad ? ' bad' : ''}`} title={title}>
      <Label label={label} path={helpPath ?? path} />
      <input
        type="number"
        step={step}
        value={text}
        data-testid={testid ?? `field-${path}`}
        aria-invalid={bad}
        onChange={(e) => {
          setText(e.target.value);
          withEditKey(path, () => onChange(e.target.value.trim() === '' ? NaN : Number(e.target.value)));
        }}
      />
      <FieldIssues path={path} exact />
    </label>
  );
}

export function SelectField<T extends string>({
  label,
  path,
  value,
  options,
  onChange,
  testid,
}: {
  label: string;
  path: string;
  value: T;
  options: ReadonlyArray<T | { value: T; label: string }>;
  onChange: (v: T) => void;
  testid?: string;
}) {
  const bad = useLab(invalid(path));
  return (
    <label className={`field${bad ? ' bad' : ''}`}>
      <Label label={label} path={path} />
      <select value={value} onChange={(e) => onChange(e.target.value as T)} data-testid={testid ?? `field-${path}`}>
        {options.map((o) => {
          const v = typeof o === 'string' ? o : o.value;
          return (
            <option key={v} value={v}>
              {typeof o === 'string' ? o : o.label}
            </option>
          );
        })}
      </select>
      <FieldIssues path={path} exact />
    </label>
  );
}

export function CheckField({
  label,
  path,
  value,
  onChange,
}: {
  label: string;
  path: string;
  value: boolean;
  onChange: (v: boolean) => void;
}) {
  return (
    <label className="field check">
      <input type="checkbox" checked={value} onChange={(e) => onChange(e.target.checked)} data-testid={`field-${path}`} />
      <Label label={label} path={path} />
    </label>
  );
}

export function TextField({
  label,
  path,
  value,
  onChange,
  multiline = false,
}: {
  label: string;
  path: string;
  value: string;
  onChange: (v: string) => void;
  multiline?: boolean;
}) {
  const bad = useLab(invalid(path));
  return (
    <label className={`field wide${bad ? ' bad' : ''}`}>
      <Label label={label} path={path} />
      {multiline ? (
        <textarea
          value={value}
          rows={4}
          onChange={(e) => withEditKey(path, () => onChange(e.target.value))}
          data-testid={`field-${path}`}
        />
      ) : (
        <input
          type="text"
          value={value}
          onChange={(e) => withEditKey(path, () => onChange(e.target.value))}
          data-testid={`field-${path}`}
        />
      )}
      <FieldIssues path={path} exact />
    </label>
  );
}
