// "Open the demo run": the bundled short run of the duo preset (public/demo/), so the Train curves, the
// Inspect episodes and the Runs exports can be explored before anything is trained. Shown in the Runs tab
// and in the empty Train and Inspect tabs; refused while a run trains.

import { openDemo } from '../actions.ts';
import { selectRunActive, useLab } from '../store.ts';

export function OpenDemo({ where }: { where: string }) {
  const active = useLab(selectRunActive);
  return (
    <button
      type="button"
      data-testid={`open-demo-${where}`}
      disabled={active}
      onClick={() => void openDemo()}
      title="a short real run of the planner → solver duo, recorded with the lab's engine: read-only, continuing it trains a copy"
    >
      Open the demo run
    </button>
  );
}
