import { describe, expect, it } from 'vitest';
import { initialPanels } from './panels';

describe('initialPanels', () => {
  it('on a wide window both open, or as the person left them', () => {
    expect(initialPanels(1440, null)).toEqual({ left: true, right: true });
    expect(initialPanels(1440, { left: false })).toEqual({ left: false, right: true });
  });
  it('at 1100 px the left panel starts collapsed so the canvas keeps its room; the inspector stays', () => {
    expect(initialPanels(1100, { left: true, right: true })).toEqual({ left: false, right: true });
  });
  it('on a narrow window both start collapsed', () => {
    expect(initialPanels(800, null)).toEqual({ left: false, right: false });
  });
});
