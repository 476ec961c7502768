import { describe, expect, it } from 'vitest';
import { readableViewport, READABLE_ZOOM } from './fit';

describe('readableViewport', () => {
  it('centres a graph that fits at a readable zoom', () => {
    const v = readableViewport({ x: 0, y: 0, width: 400, height: 200 }, 1000, 800, 3);
    expect(v.zoom).toBeGreaterThanOrEqual(READABLE_ZOOM);
    expect(v.x + (200 * v.zoom)).toBeCloseTo(500);
    expect(v.y + (100 * v.zoom)).toBeCloseTo(400);
  });
  it('keeps a wide 7-node graph readable, from its left', () => {
    const v = readableViewport({ x: 100, y: 0, width: 4400, height: 400 }, 830, 780, 7);
    expect(v.zoom).toBe(READABLE_ZOOM);
    expect(v.x + 100 * v.zoom).toBe(24); // its left edge at the margin
  });
  it('lets a large graph zoom out to show its shape', () => {
    const v = readableViewport({ x: 0, y: 0, width: 20000, height: 3000 }, 1000, 800, 400);
    expect(v.zoom).toBeLessThan(0.1);
  });
  it('never zooms in past 1.2', () => {
    expect(readableViewport({ x: 0, y: 0, width: 50, height: 50 }, 1000, 800, 1).zoom).toBe(1.2);
  });
});
