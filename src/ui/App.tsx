import { Builder } from './builder/Builder.tsx';
import { ControlBar } from './ControlBar.tsx';
import { GpuStatus } from './GpuStatus.tsx';
import { Inspector } from './inspector/Inspector.tsx';
import { LiveView } from './live/LiveView.tsx';
import { Notices } from './Notices.tsx';
import { RunsView } from './runs/RunsView.tsx';
import { StoragePanel } from './runs/StoragePanel.tsx';
import { type Tab, selectTab, setTab, useLab } from './store.ts';

const TABS: Array<[Tab, string]> = [['build', 'Build'], ['train', 'Train'], ['inspect', 'Inspect'], ['runs', 'Runs']];

export function App() {
  const tab = useLab(selectTab);
  return (
    <main>
      <header>
        <div>
          <h1>MARFT Lab</h1>
          <p className="tagline">Multi-agent reinforcement fine-tuning of LLM teams, on your own GPU, in the browser.</p>
        </div>
        <GpuStatus />
      </header>
      <ControlBar />
      <Notices />
      <nav className="tabs" role="tablist">
        {TABS.map(([id, label]) => (
          <button key={id} type="button" role="tab" aria-selected={tab === id} className={tab === id ? 'active' : ''} data-testid={`tab-${id}`} onClick={() => setTab(id)}>{label}</button>
        ))}
      </nav>
      <div hidden={tab !== 'build'}><Builder /></div>
      <div hidden={tab !== 'train'}><LiveView /></div>
      <div hidden={tab !== 'inspect'}><Inspector /></div>
      <div hidden={tab !== 'runs'}><StoragePanel /><RunsView /></div>
    </main>
  );
}
