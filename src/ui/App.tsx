// The lab's page: header, control bar, notices and the five views as ARIA tabs (arrow keys move between them).

import { Builder } from './builder/Builder.tsx';
import { ControlBar } from './ControlBar.tsx';
import { EngineBanner } from './EngineBanner.tsx';
import { GpuStatus } from './GpuStatus.tsx';
import { Inspector } from './inspector/Inspector.tsx';
import { LiveView } from './live/LiveView.tsx';
import { Notices } from './Notices.tsx';
import { RunsView } from './runs/RunsView.tsx';
import { StoragePanel } from './runs/StoragePanel.tsx';
import { TryPanel } from './try/TryPanel.tsx';
import { type Tab, selectTab, setTab, useLab } from './store.ts';

const TABS: Array<[Tab, string]> = [
  ['build', 'Build'],
  ['train', 'Train'],
  ['inspect', 'Inspect'],
  ['try', 'Try the team'],
  ['runs', 'Runs'],
];

export function App() {
  const tab = useLab(selectTab);
  const panel = (id: Tab) => ({ id: `panel-${id}`, role: 'tabpanel', 'aria-labelledby': `tab-${id}`, hidden: tab !== id });
  // the WAI-ARIA tabs pattern: arrows, Home and End move between tabs (one tab stop for the list)
  const onTabKey = (e: React.KeyboardEvent) => {
    const i = TABS.findIndex(([id]) => id === tab);
    const next = { ArrowRight: i + 1, ArrowLeft: i - 1 + TABS.length, Home: 0, End: TABS.length - 1 }[e.key];
    if (next === undefined) return;
    e.preventDefault();
    const id = TABS[next % TABS.length][0];
    setTab(id);
    document.getElementById(`tab-${id}`)?.focus();
  };
  return (
    <main>
      <header>
        <div>
          <h1>MARFT Lab</h1>
          <p className="tagline">Multi-agent reinforcement fine-tuning of LLM teams, on your own GPU, in the browser.</p>
        </div>
        <GpuStatus />
      </header>
      <EngineBanner />
      <ControlBar />
      <Notices />
      <nav className="tabs" role="tablist" aria-label="views" onKeyDown={onTabKey}>
        {TABS.map(([id, label]) => (
          <button
            key={id}
            id={`tab-${id}`}
            type="button"
            role="tab"
            aria-selected={tab === id}
            aria-controls={`panel-${id}`}
            tabIndex={tab === id ? 0 : -1}
            className={tab === id ? 'active' : ''}
            data-testid={`tab-${id}`}
            onClick={() => setTab(id)}
          >
            {label}
          </button>
        ))}
      </nav>
      <div {...panel('build')}>
        <Builder />
      </div>
      <div {...panel('train')}>
        <LiveView />
      </div>
      <div {...panel('inspect')}>
        <Inspector />
      </div>
      <div {...panel('try')}>
        <TryPanel />
      </div>
      <div {...panel('runs')}>
        <StoragePanel />
        <RunsView />
      </div>
    </main>
  );
}
