import { usePanels, type PanelSide } from '../store/panels';

const LABEL: Record<PanelSide, string> = { left: 'side panel', right: 'details panel' };

/** Shows or hides a side panel; the canvas takes the room. */
export function PanelToggle({ side, label }: { side: PanelSide; label?: string }) {
  const open = usePanels((s) => s.open[side]);
  const toggle = usePanels((s) => s.toggle);
  const what = label ?? LABEL[side];
  const arrow = side === 'left' ? (open ? '⟨' : '⟩') : open ? '⟩' : '⟨';
  return (
    <button
      className="btn btn--small panel-toggle"
      onClick={() => toggle(side)}
      aria-expanded={open}
      aria-label={`${open ? 'Hide' : 'Show'} the ${what}`}
      title={`${open ? 'Hide' : 'Show'} the ${what}`}
      data-testid={`toggle-${side}-panel`}
    >
      {arrow}
    </button>
  );
}
