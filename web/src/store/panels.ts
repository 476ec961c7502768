import { create } from 'zustand';

/**
 * Below this width the left panel (palette, workflow list) starts
 * collapsed: the canvas and the inspector come first. Panels never cover
 * the canvas at any width: an open panel takes its room from it.
 */
export const COMPACT_PX = 1280;
/** Below this width both side panels start collapsed. */
export const NARROW_PX = 900;

export type PanelSide = 'left' | 'right';

type PanelsState = {
  open: Record<PanelSide, boolean>;
  toggle: (side: PanelSide) => void;
  set: (side: PanelSide, open: boolean) => void;
};

const KEY = 'switchyard.panels';

/** Which panels start open at this window width (`stored`: what the person chose on a wide screen). */
export function initialPanels(width: number, stored: Partial<Record<PanelSide, boolean>> | null): Record<PanelSide, boolean> {
  if (width < NARROW_PX) return { left: false, right: false };
  if (width < COMPACT_PX) return { left: false, right: true };
  return { left: stored?.left ?? true, right: stored?.right ?? true };
}

function initial(): Record<PanelSide, boolean> {
  const width = typeof window !== 'undefined' ? window.innerWidth : COMPACT_PX;
  let stored: Partial<Record<PanelSide, boolean>> | null = null;
  try {
    stored = JSON.parse(localStorage.getItem(KEY) ?? 'null') as Partial<Record<PanelSide, boolean>> | null;
  } catch {
    /* private mode, or junk */
  }
  return initialPanels(width, stored);
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
    if (typeof window === 'undefined' || window.innerWidth >= COMPACT_PX) persist(open);
    set({ open });
  },
}));
