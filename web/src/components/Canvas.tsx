import {
  Background,
  BackgroundVariant,
  Controls,
  MiniMap,
  ReactFlow,
  useReactFlow,
  useStore,
  type Connection,
  type Edge,
  type IsValidConnection,
  type Node,
  type NodeMouseHandler,
} from '@xyflow/react';
import { useCallback, useEffect, useRef, type DragEvent } from 'react';
import { connectionProblem } from '../graph/connect';
import { isEditableType, type FlowNode } from '../graph/types';
import { CanvasModeContext } from '../nodes/mode';
import { EdgeMarkers } from '../nodes/edges';
import { edgeTypes, nodeTypes } from '../nodes/types';
import { useApp } from '../store/app';
import { useEditor } from '../store/editor';
import { useRun } from '../store/run';

export const DND_MIME = 'application/x-switchyard-node';
const SNAP: [number, number] = [16, 16];
const PRO = { hideAttribution: true };
/** Above this many nodes, render only what is on screen. */
const VISIBLE_ONLY_THRESHOLD = 150;
/** A minimap helps only on graphs bigger than the view; on small ones it covers nodes. */
const MINIMAP_THRESHOLD = 12;

const MINIMAP_COLORS: Record<string, string> = {
  start: '#3fa46a',
  agent: '#3b6fd8',
  if: '#c98a1b',
  approval: '#b04fc0',
  yaml: '#6b7280',
};
const minimapColor = (n: Node) => MINIMAP_COLORS[n.type ?? ''] ?? '#888';

let nodeMapCache: { nodes: FlowNode[]; map: Map<string, FlowNode> } | null = null;
function nodeMap(nodes: FlowNode[]): Map<string, FlowNode> {
  if (nodeMapCache?.nodes !== nodes) nodeMapCache = { nodes, map: new Map(nodes.map((n) => [n.id, n])) };
  return nodeMapCache.map;
}

const isValidConnection: IsValidConnection = (c: Edge | Connection) => {
  const s = useEditor.getState();
  return connectionProblem(c, nodeMap(s.nodes), s.edges) === null;
};

/**
 * Fit options that keep text readable: a small graph is never shrunk below
 * a readable zoom (the rest is a pan away); large ones may go further out
 * to show their shape.
 */
export function fitOptions(nodeCount: number): { padding: number; maxZoom: number; minZoom: number } {
  const minZoom = nodeCount <= 25 ? 0.6 : nodeCount <= 60 ? 0.35 : 0.05;
  return { padding: 0.15, maxZoom: 1.2, minZoom };
}

function useFitOnRequest(fitRequest: number) {
  const rf = useReactFlow();
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      if (fitRequest === 0) return;
    }
    // Two frames: nodes are measured after the first paint.
    let f2 = 0;
    const f1 = requestAnimationFrame(() => {
      f2 = requestAnimationFrame(() => void rf.fitView({ ...fitOptions(rf.getNodes().length), duration: 200 }));
    });
    return () => {
      cancelAnimationFrame(f1);
      cancelAnimationFrame(f2);
    };
  }, [fitRequest, rf]);
}

/** Below this zoom node details are unreadable; hiding them saves paint time. */
const FAR_ZOOM = 0.4;
/** Below this zoom even titles are: nodes paint as plain coloured boxes. */
const TINY_ZOOM = 0.2;
function useFarClass(): string {
  return useStore((s) => (s.transform[2] < TINY_ZOOM ? ' is-far is-tiny' : s.transform[2] < FAR_ZOOM ? ' is-far' : ''));
}

function useColorMode() {
  return useApp((s) => s.theme);
}

export function EditorCanvas({
  snap,
  onNodeActivate,
}: {
  snap: boolean;
  onNodeActivate: (id: string) => void;
}) {
  const nodes = useEditor((s) => s.nodes);
  const edges = useEditor((s) => s.edges);
  const onNodesChange = useEditor((s) => s.onNodesChange);
  const onEdgesChange = useEditor((s) => s.onEdgesChange);
  const connect = useEditor((s) => s.connect);
  const readOnly = useEditor((s) => s.kind === 'yaml');
  const fitRequest = useEditor((s) => s.fitRequest);
  const colorMode = useColorMode();
  const rf = useReactFlow();
  const far = useFarClass();
  useFitOnRequest(fitRequest);

  const onDragOver = useCallback((e: DragEvent) => {
    if (e.dataTransfer.types.includes(DND_MIME)) {
      e.preventDefault();
      e.dataTransfer.dropEffect = 'copy';
    }
  }, []);
  const onDrop = useCallback(
    (e: DragEvent) => {
      const type = e.dataTransfer.getData(DND_MIME);
      if (!isEditableType(type)) return;
      e.preventDefault();
      const p = rf.screenToFlowPosition({ x: e.clientX, y: e.clientY });
      useEditor.getState().addNode(type, { x: p.x - 110, y: p.y - 30 });
    },
    [rf],
  );
  const onNodeClick: NodeMouseHandler<FlowNode> = useCallback((_, n) => onNodeActivate(n.id), [onNodeActivate]);

  return (
    <CanvasModeContext.Provider value="edit">
      <div className={`sy-canvas${far}`} data-testid="canvas" onDragOver={onDragOver} onDrop={onDrop}>
        <EdgeMarkers />
        <ReactFlow<FlowNode>
          nodes={nodes}
          edges={edges}
          nodeTypes={nodeTypes}
          edgeTypes={edgeTypes}
          onNodesChange={onNodesChange}
          onEdgesChange={onEdgesChange}
          onConnect={connect}
          isValidConnection={isValidConnection}
          onNodeClick={onNodeClick}
          nodesDraggable={!readOnly}
          nodesConnectable={!readOnly}
          snapToGrid={snap}
          snapGrid={SNAP}
          deleteKeyCode={null}
          selectionKeyCode="Shift"
          multiSelectionKeyCode={['Meta', 'Control']}
          onlyRenderVisibleElements={nodes.length > VISIBLE_ONLY_THRESHOLD}
          colorMode={colorMode}
          fitView
          fitViewOptions={fitOptions(nodes.length)}
          minZoom={0.05}
          maxZoom={2}
          proOptions={PRO}
          aria-label="Workflow canvas"
        >
          <Background variant={BackgroundVariant.Dots} gap={16} size={1} />
          <Controls showInteractive={false} fitViewOptions={fitOptions(nodes.length)} aria-label="Zoom controls" />
          {nodes.length > MINIMAP_THRESHOLD && <MiniMap pannable zoomable nodeColor={minimapColor} ariaLabel="Minimap" />}
        </ReactFlow>
      </div>
    </CanvasModeContext.Provider>
  );
}

export function RunCanvas() {
  const nodes = useRun((s) => s.nodes);
  const edges = useRun((s) => s.edges);
  const onNodesChange = useRun((s) => s.onNodesChange);
  const select = useRun((s) => s.select);
  const fitRequest = useRun((s) => s.fitRequest);
  const colorMode = useColorMode();
  const far = useFarClass();
  useFitOnRequest(fitRequest);
  const onNodeClick: NodeMouseHandler<FlowNode> = useCallback((_, n) => select(n.id), [select]);
  const onPaneClick = useCallback(() => select(null), [select]);
  return (
    <CanvasModeContext.Provider value="run">
      <div className={`sy-canvas${far}`} data-testid="run-canvas">
        <EdgeMarkers />
        <ReactFlow<FlowNode>
          nodes={nodes}
          edges={edges}
          nodeTypes={nodeTypes}
          edgeTypes={edgeTypes}
          onNodesChange={onNodesChange}
          onNodeClick={onNodeClick}
          onPaneClick={onPaneClick}
          nodesDraggable={false}
          nodesConnectable={false}
          edgesFocusable={false}
          deleteKeyCode={null}
          onlyRenderVisibleElements={nodes.length > VISIBLE_ONLY_THRESHOLD}
          colorMode={colorMode}
          fitView
          fitViewOptions={fitOptions(nodes.length)}
          minZoom={0.05}
          maxZoom={2}
          proOptions={PRO}
          aria-label="Run graph"
        >
          <Background variant={BackgroundVariant.Dots} gap={16} size={1} />
          <Controls showInteractive={false} fitViewOptions={fitOptions(nodes.length)} />
          {nodes.length > MINIMAP_THRESHOLD && <MiniMap pannable zoomable nodeColor={minimapColor} ariaLabel="Minimap" />}
        </ReactFlow>
      </div>
    </CanvasModeContext.Provider>
  );
}
