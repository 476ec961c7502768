/** A rectangle in flow coordinates. */
export type Rect = { x: number; y: number; width: number; height: number };
export type Viewport = { x: number; y: number; zoom: number };

/** Node text is about 11-13 px: below this zoom it cannot be read. */
export const READABLE_ZOOM = 0.8;

/**
 * Zoom bounds for fitting: a small graph is never shrunk below a readable
 * zoom (the rest is a pan away); large ones may go further out, to show
 * their shape.
 */
export function fitOptions(nodeCount: number): { padding: number; maxZoom: number; minZoom: number } {
  const minZoom = nodeCount <= 25 ? READABLE_ZOOM : nodeCount <= 60 ? 0.4 : 0.05;
  return { padding: 0.1, maxZoom: 1.2, minZoom };
}

const MARGIN = 24;

/**
 * The viewport that shows bounds in a width×height pane: centred when it
 * fits at a readable zoom, else at the readable zoom from its left (where a
 * workflow starts), centred vertically if its height fits, else from the top.
 */
export function readableViewport(b: Rect, width: number, height: number, nodeCount: number): Viewport {
  const { padding, maxZoom, minZoom } = fitOptions(nodeCount);
  if (b.width <= 0 || b.height <= 0 || width <= 0 || height <= 0) return { x: MARGIN, y: MARGIN, zoom: 1 };
  const fit = Math.min(width / (b.width * (1 + 2 * padding)), height / (b.height * (1 + 2 * padding)));
  const zoom = Math.min(maxZoom, Math.max(minZoom, fit));
  const cx = (b.x + b.width / 2) * zoom;
  const cy = (b.y + b.height / 2) * zoom;
  const x = b.width * zoom + 2 * MARGIN <= width ? width / 2 - cx : MARGIN - b.x * zoom;
  const y = b.height * zoom + 2 * MARGIN <= height ? height / 2 - cy : MARGIN - b.y * zoom;
  return { x, y, zoom };
}
