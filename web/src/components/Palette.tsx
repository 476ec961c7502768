import { useReactFlow } from '@xyflow/react';
import { useRef, type DragEvent } from 'react';
import { PALETTE } from '../graph/factory';
import { freeSpot } from '../graph/layout';
import type { EditableNodeType } from '../graph/types';
import { useEditor } from '../store/editor';
import { useYamlFile } from '../store/yamlFile';
import { DND_MIME, YAML_DND_MIME } from './Canvas';
import { YAML_KINDS, type YamlNodeKind } from '../api/types';
import { errorMessage } from '../api/client';
import { useApp } from '../store/app';

/** The seven YAML step kinds: a click adds one to the file (addNode edit). */
function YamlPalette() {
  const rf = useReactFlow();
  // Spots given to steps whose write has not come back yet: a second quick
  // click must not pick the same one.
  const pending = useRef<Array<{ id: string; position: { x: number; y: number } }>>([]);
  const add = (kind: YamlNodeKind) => {
    const el = document.querySelector('[data-testid="canvas"]');
    const r = el?.getBoundingClientRect() ?? new DOMRect(0, 0, innerWidth, innerHeight);
    const p = rf.screenToFlowPosition({ x: r.left + r.width / 2, y: r.top + r.height / 2 });
    const tl = rf.screenToFlowPosition({ x: r.left + 8, y: r.top + 8 });
    const br = rf.screenToFlowPosition({ x: r.right - 8, y: r.bottom - 8 });
    const visible = { x: tl.x, y: tl.y, width: br.x - tl.x, height: br.y - tl.y };
    const nodes = [...useEditor.getState().nodes, ...pending.current];
    const size = { width: 240, height: 110 };
    const spot = freeSpot(nodes, { x: p.x - size.width / 2, y: p.y - size.height / 2 }, size, 24, visible);
    const mine = { id: `pending-${Date.now()}-${Math.random()}`, position: spot };
    pending.current.push(mine);
    const inView = spot.x >= visible.x && spot.y >= visible.y && spot.x + size.width <= visible.x + visible.width && spot.y + size.height <= visible.y + visible.height;
    if (!inView) void rf.setCenter(spot.x + size.width / 2, spot.y + size.height / 2, { zoom: rf.getZoom(), duration: 200 });
    useYamlFile
      .getState()
      .addNode(kind, spot)
      .catch((e) => {
        useApp.getState().toast(`Could not add the step: ${errorMessage(e)}`, 'error');
      })
      .finally(() => {
        pending.current = pending.current.filter((x) => x !== mine);
      });
  };
  return (
    <section className="palette" aria-labelledby="palette-title">
      <h2 id="palette-title" className="side-title">
        Add step
      </h2>
      <div className="palette__items">
        {YAML_KINDS.map((k) => (
          <button
            key={k}
            className="palette__item palette__item--yaml"
            draggable
            onDragStart={(e) => {
              e.dataTransfer.setData(YAML_DND_MIME, k);
              e.dataTransfer.effectAllowed = 'copy';
            }}
            onClick={() => add(k)}
            title={`Add a ${k} step to the file. Click to add, or drag onto the canvas.`}
            aria-label={`Add ${k} step`}
            data-testid={`palette-yaml-${k}`}
          >
            <span className="palette__dot" aria-hidden="true" />
            {k}
          </button>
        ))}
      </div>
    </section>
  );
}

export function Palette() {
  const rf = useReactFlow();
  const yamlMode = useEditor((s) => s.kind === 'yaml');
  const editable = useYamlFile((s) => s.editable);
  if (yamlMode) return editable ? <YamlPalette /> : null;
  // Click-to-add: at the centre of the visible canvas, or the nearest free
  // spot that is still wholly visible (never off-screen or under a panel).
  const add = (type: EditableNodeType) => {
    const el = document.querySelector('[data-testid="canvas"]');
    const r = el?.getBoundingClientRect() ?? new DOMRect(0, 0, innerWidth, innerHeight);
    const p = rf.screenToFlowPosition({ x: r.left + r.width / 2, y: r.top + r.height / 2 });
    const tl = rf.screenToFlowPosition({ x: r.left + 8, y: r.top + 8 });
    const br = rf.screenToFlowPosition({ x: r.right - 8, y: r.bottom - 8 });
    const visible = { x: tl.x, y: tl.y, width: br.x - tl.x, height: br.y - tl.y };
    const ed = useEditor.getState();
    const size = { width: 240, height: 110 };
    const spot = freeSpot(ed.nodes, { x: p.x - size.width / 2, y: p.y - size.height / 2 }, size, 24, visible);
    ed.addNode(type, spot);
    revealSpot(spot, size, visible);
  };
  /** A spot outside the visible canvas (the visible part is full): pan there. */
  const revealSpot = (spot: { x: number; y: number }, size: { width: number; height: number }, visible: { x: number; y: number; width: number; height: number }) => {
    const inView = spot.x >= visible.x && spot.y >= visible.y && spot.x + size.width <= visible.x + visible.width && spot.y + size.height <= visible.y + visible.height;
    if (!inView) void rf.setCenter(spot.x + size.width / 2, spot.y + size.height / 2, { zoom: rf.getZoom(), duration: 200 });
  };
  const onDragStart = (e: DragEvent, type: EditableNodeType) => {
    e.dataTransfer.setData(DND_MIME, type);
    e.dataTransfer.effectAllowed = 'copy';
  };
  return (
    <section className="palette" aria-labelledby="palette-title">
      <h2 id="palette-title" className="side-title">
        Add node
      </h2>
      <div className="palette__items">
        {PALETTE.map((p) => (
          <button
            key={p.type}
            className={`palette__item palette__item--${p.type}`}
            draggable
            onDragStart={(e) => onDragStart(e, p.type)}
            onClick={() => add(p.type)}
            title={`${p.hint}. Click to add, or drag onto the canvas.`}
            aria-label={`Add ${p.label} node`}
            data-testid={`palette-${p.type}`}
          >
            <span className="palette__dot" aria-hidden="true" />
            {p.label}
          </button>
        ))}
      </div>
    </section>
  );
}
