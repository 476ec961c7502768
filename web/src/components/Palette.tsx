import { useReactFlow } from '@xyflow/react';
import type { DragEvent } from 'react';
import { PALETTE } from '../graph/factory';
import { freeSpot } from '../graph/layout';
import type { EditableNodeType } from '../graph/types';
import { useEditor } from '../store/editor';
import { DND_MIME } from './Canvas';

export function Palette() {
  const rf = useReactFlow();
  const readOnly = useEditor((s) => s.kind === 'yaml');
  if (readOnly) return null;
  const add = (type: EditableNodeType) => {
    const el = document.querySelector('[data-testid="canvas"]');
    const r = el?.getBoundingClientRect();
    const center = r ? { x: r.left + r.width / 2, y: r.top + r.height / 2 } : { x: innerWidth / 2, y: innerHeight / 2 };
    const p = rf.screenToFlowPosition(center);
    const ed = useEditor.getState();
    ed.addNode(type, freeSpot(ed.nodes, { x: p.x - 120, y: p.y - 55 }));
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
