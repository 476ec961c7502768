/** A rectangle in flow coordinates. */
export type Rect = { x: number; y: number; width: number; height: number };
export type Viewport = { x: number; y: number; zoom: number };

/** Node text is about 11-13 px: below this zoom it is hard to read. */
export const READABLE_ZOOM = 0.8;
/** Fit never enlarges past the nodes' natural size. */
export const FIT_MAX_ZOOM = 1;
/** The canvas' own limit (React Flow minZoom): a huge graph still fits. */
export const FIT_MIN_ZOOM = 0.05;
/** Room kept between the graph and the pane's edges, in screen pixels. */
const MARGIN = 32;

/**
 * The viewport that shows all of `b` in a width×height pane, centred: the
 * whole graph, at its natural size when that fits and smaller when it does
 * not (text stays readable only as long as everything fits readably: a
 * graph cut off at the edge hides steps, which is worse than small text a
 * zoom away).
 */
export function fitViewport(b: Rect, width: number, height: number): Viewport {
  if (b.width <= 0 || b.height <= 0 || width <= 0 || height <= 0) return { x: MARGIN, y: MARGIN, zoom: 1 };
  const room = (n: number) => Math.max(n - 2 * MARGIN, n * 0.5);
  const fit = Math.min(room(width) / b.width, room(height) / b.height);
  const zoom = Math.min(FIT_MAX_ZOOM, Math.max(FIT_MIN_ZOOM, fit));
  return { x: width / 2 - (b.x + b.width / 2) * zoom, y: height / 2 - (b.y + b.height / 2) * zoom, zoom };
}

/** Whether every part of `b` is inside the pane at viewport `v`. */
export function showsAll(b: Rect, width: number, height: number, v: Viewport): boolean {
  const x0 = b.x * v.zoom + v.x;
  const y0 = b.y * v.zoom + v.y;
  return x0 >= -0.5 && y0 >= -0.5 && x0 + b.width * v.zoom <= width + 0.5 && y0 + b.height * v.zoom <= height + 0.5;
}
