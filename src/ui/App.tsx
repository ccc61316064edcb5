import { GpuStatus } from './GpuStatus.tsx';

export function App() {
  return (
    <main>
      <header>
        <h1>MARFT Lab</h1>
        <p className="tagline">Multi-agent reinforcement fine-tuning of LLM teams, on your own GPU, in the browser.</p>
      </header>
      <GpuStatus />
    </main>
  );
}
