import { describe, expect, it } from 'vitest';
import { FIT_MAX_ZOOM, fitViewport, READABLE_ZOOM, showsAll } from './fit';

describe('fitViewport', () => {
  it('centres a small graph at its natural size', () => {
    const b = { x: 0, y: 0, width: 400, height: 200 };
    const v = fitViewport(b, 1000, 800);
    expect(v.zoom).toBe(FIT_MAX_ZOOM);
    expect(v.x + 200 * v.zoom).toBeCloseTo(500);
    expect(v.y + 100 * v.zoom).toBeCloseTo(400);
    expect(showsAll(b, 1000, 800, v)).toBe(true);
  });
  it('shows every node of a wide 7-node graph, below the readable zoom when it must', () => {
    const b = { x: 100, y: 0, width: 4400, height: 400 };
    const v = fitViewport(b, 830, 780);
    expect(v.zoom).toBeLessThan(READABLE_ZOOM);
    expect(showsAll(b, 830, 780, v)).toBe(true);
  });
  it('a 22-step column fits whole in a short pane', () => {
    const b = { x: 0, y: -1500, width: 240, height: 3000 };
    const v = fitViewport(b, 1100, 600);
    expect(showsAll(b, 1100, 600, v)).toBe(true);
  });
  it('a huge graph zooms out as far as the canvas allows', () => {
    const v = fitViewport({ x: 0, y: 0, width: 200000, height: 3000 }, 1000, 800);
    expect(v.zoom).toBe(0.05);
  });
});
