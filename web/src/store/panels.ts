import { create } from 'zustand';

/** Below this width the side panels start hidden and open over the canvas. */
export const NARROW_PX = 1100;

export type PanelSide = 'left' | 'right';

type PanelsState = {
  open: Record<PanelSide, boolean>;
  toggle: (side: PanelSide) => void;
  set: (side: PanelSide, open: boolean) => void;
};

const KEY = 'switchyard.panels';

function initial(): Record<PanelSide, boolean> {
  const narrow = typeof window !== 'undefined' && window.innerWidth < NARROW_PX;
  const def = { left: !narrow, right: !narrow };
  if (narrow) return def; // on a small screen the canvas comes first
  try {
    const v = JSON.parse(localStorage.getItem(KEY) ?? 'null') as Partial<Record<PanelSide, boolean>> | null;
    return { left: v?.left ?? true, right: v?.right ?? true };
  } catch {
    return def;
  }
}

function persist(open: Record<PanelSide, boolean>) {
  try {
    localStorage.setItem(KEY, JSON.stringify(open));
  } catch {
    /* private mode */
  }
}

/** Which side panels are open (remembered on wide screens). */
export const usePanels = create<PanelsState>((set, get) => ({
  open: initial(),
  toggle: (side) => get().set(side, !get().open[side]),
  set: (side, value) => {
    const open = { ...get().open, [side]: value };
    if (typeof window === 'undefined' || window.innerWidth >= NARROW_PX) persist(open);
    set({ open });
  },
}));
