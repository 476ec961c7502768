import {
  Background,
  BackgroundVariant,
  ControlButton,
  Controls,
  MiniMap,
  ReactFlow,
  useNodesInitialized,
  useReactFlow,
  useStore,
  useStoreApi,
  type Connection,
  type Edge,
  type IsValidConnection,
  type Node,
  type NodeChange,
  type NodeMouseHandler,
} from '@xyflow/react';
import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type DragEvent } from 'react';
import { isGroupNodeId, isIncluded, withGroups } from '../graph/groups';
import { connectionProblem } from '../graph/connect';
import { fitViewport } from '../graph/fit';
import { isEditableType, type FlowNode } from '../graph/types';
import { CanvasModeContext } from '../nodes/mode';
import { EdgeMarkers } from '../nodes/edges';
import { RoutesProvider } from '../nodes/routes';
import { CanvasSearch } from './CanvasSearch';
import { NodeMenu } from './ForkDialog';
import { useZoomKeys } from './Shortcuts';
import { edgeTypes, nodeTypes } from '../nodes/types';
import { useApp } from '../store/app';
import { errorMessage } from '../api/client';
import { useEditor } from '../store/editor';
import { connect } from '../store/editing';
import { useYamlFile } from '../store/yamlFile';
import { useRun } from '../store/run';
import type { YamlNodeKind } from '../api/types';

export const DND_MIME = 'application/x-switchyard-node';
/** Drag data of the YAML palette: a step kind. */
export const YAML_DND_MIME = 'application/x-switchyard-yaml-kind';
/** A YAML dependency may not start or end at a node an include inlined (it is not in the file). */
const isValidYamlConnection = (c: { source: string | null; target: string | null }) => {
  if (!c.source || !c.target || c.source === c.target) return false;
  const byId = nodeMap(useEditor.getState().nodes);
  return !isIncluded(byId.get(c.source)) && !isIncluded(byId.get(c.target));
};
const SNAP: [number, number] = [16, 16];
const PRO = { hideAttribution: true };
/** Above this many nodes, render only what is on screen. */
const VISIBLE_ONLY_THRESHOLD = 150;
/** A minimap helps only on graphs with more nodes than this (and only while some are out of view). */
const MINIMAP_THRESHOLD = 12;

const MINIMAP_COLORS: Record<string, string> = {
  start: '#3fa46a',
  agent: '#3b6fd8',
  if: '#c98a1b',
  approval: '#b04fc0',
  yaml: '#6b7280',
  includeGroup: 'transparent',
};
const minimapColor = (n: Node) => MINIMAP_COLORS[n.type ?? ''] ?? '#888';

/** Drops React Flow's changes to group boxes: they are derived, not stored. */
function storedOnly<T extends NodeChange<FlowNode>>(changes: T[]): T[] {
  return changes.some((c) => 'id' in c && isGroupNodeId(c.id)) ? changes.filter((c) => !('id' in c && isGroupNodeId(c.id))) : changes;
}

let nodeMapCache: { nodes: FlowNode[]; map: Map<string, FlowNode> } | null = null;
function nodeMap(nodes: FlowNode[]): Map<string, FlowNode> {
  if (nodeMapCache?.nodes !== nodes) nodeMapCache = { nodes, map: new Map(nodes.map((n) => [n.id, n])) };
  return nodeMapCache.map;
}

const isValidConnection: IsValidConnection = (c: Edge | Connection) => {
  const s = useEditor.getState();
  return connectionProblem(c, nodeMap(s.nodes), s.edges) === null;
};

/** Fits the whole graph in the pane (see fitViewport). */
export function useFit(): (duration?: number) => void {
  const rf = useReactFlow();
  const store = useStoreApi();
  return useCallback(
    (duration = 200) => {
      const nodes = rf.getNodes();
      if (nodes.length === 0) return;
      const { width, height } = store.getState();
      void rf.setViewport(fitViewport(rf.getNodesBounds(nodes), width, height), { duration });
    },
    [rf, store],
  );
}

/** Marks the view as moved by the person (not refitted on resize any more). */
const MovedContext = createContext<() => void>(() => {});

/**
 * Fits when the nodes are first measured and on every fit request; and
 * again when the pane changes size (a panel opens, the log grows) as long
 * as the person has not touched the canvas since (a pan, a zoom, a click, a
 * drag): the view never moves under the pointer.
 */
function useAutoFit(fitRequest: number) {
  const fit = useFit();
  const measured = useNodesInitialized();
  const done = useRef<number | null>(null);
  const moved = useRef(false);
  const size = useStore((s) => `${Math.round(s.width)}x${Math.round(s.height)}`);
  useEffect(() => {
    if (!measured || done.current === fitRequest) return;
    const first = done.current === null;
    done.current = fitRequest;
    moved.current = false;
    // A frame: positions applied by the request are painted first.
    const f = requestAnimationFrame(() => fit(first ? 0 : 200));
    return () => cancelAnimationFrame(f);
  }, [fitRequest, measured, fit]);
  useEffect(() => {
    if (!measured || done.current === null || moved.current) return;
    const f = requestAnimationFrame(() => fit(0));
    return () => cancelAnimationFrame(f);
  }, [size, measured, fit]);
  const markMoved = useCallback(() => {
    moved.current = true;
  }, []);
  // A pan or zoom by the person (programmatic moves have no event).
  const onMoveStart = useCallback((e: unknown) => {
    if (e) moved.current = true;
  }, []);
  return { onMoveStart, markMoved };
}

/** The zoom controls' fit button: the whole graph. */
function FitButton() {
  const fit = useFit();
  return (
    <ControlButton onClick={() => fit()} className="react-flow__controls-fitview" title="Fit view" aria-label="Fit view">
      <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 30" aria-hidden="true">
        <path d="M3.692 4.63c0-.53.4-.938.939-.938h5.215V0H4.708C2.13 0 0 2.054 0 4.63v5.216h3.692V4.631zM27.354 0h-5.2v3.692h5.17c.53 0 .984.4.984.939v5.215H32V4.631A4.624 4.624 0 0027.354 0zm.954 24.83c0 .532-.4.94-.939.94h-5.215v3.768h5.215c2.577 0 4.631-2.13 4.631-4.707v-5.139h-3.692v5.139zm-23.677.94c-.531 0-.939-.4-.939-.94v-5.138H0v5.139c0 2.577 2.13 4.707 4.708 4.707h5.138V25.77H4.631z" />
      </svg>
    </ControlButton>
  );
}

/**
 * The minimap, on graphs big enough to need one and only while part of the
 * graph is out of view: when everything is in view it would only cover nodes.
 */
function SmartMiniMap({ count }: { count: number }) {
  const partly = useStore((s) => {
    if (count <= MINIMAP_THRESHOLD) return false;
    const [tx, ty, z] = s.transform;
    for (const n of s.nodeLookup.values()) {
      if (isGroupNodeId(n.id)) continue;
      const p = n.internals.positionAbsolute;
      const x0 = p.x * z + tx;
      const y0 = p.y * z + ty;
      if (x0 < 0 || y0 < 0 || x0 + (n.measured?.width ?? 0) * z > s.width || y0 + (n.measured?.height ?? 0) * z > s.height) return true;
    }
    return false;
  });
  return partly ? <MiniMap pannable zoomable nodeColor={minimapColor} ariaLabel="Minimap" /> : null;
}

/** Zoom in/out and fit; a zoom by hand stops the automatic refit on resize. */
function ZoomControls() {
  const moved = useContext(MovedContext);
  return (
    <Controls showInteractive={false} showFitView={false} aria-label="Zoom controls" onZoomIn={moved} onZoomOut={moved}>
      <FitButton />
    </Controls>
  );
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
  const stored = useEditor((s) => s.nodes);
  const nodes = useMemo(() => withGroups(stored), [stored]);
  const edges = useEditor((s) => s.edges);
  const onStoreNodesChange = useEditor((s) => s.onNodesChange);
  const onNodesChange = useCallback((c: NodeChange<FlowNode>[]) => onStoreNodesChange(storedOnly(c)), [onStoreNodesChange]);
  const onEdgesChange = useEditor((s) => s.onEdgesChange);
  const yamlEditable = useYamlFile((s) => s.editable);
  const readOnly = useEditor((s) => s.kind === 'yaml') && !yamlEditable;
  const yamlMode = useEditor((s) => s.kind === 'yaml');
  const fitRequest = useEditor((s) => s.fitRequest);
  const colorMode = useColorMode();
  const rf = useReactFlow();
  const far = useFarClass();
  const { onMoveStart, markMoved } = useAutoFit(fitRequest);
  const fitNow = useFit();
  useZoomKeys(fitNow, markMoved);

  const onDragOver = useCallback((e: DragEvent) => {
    if (e.dataTransfer.types.includes(DND_MIME) || e.dataTransfer.types.includes(YAML_DND_MIME)) {
      e.preventDefault();
      e.dataTransfer.dropEffect = 'copy';
    }
  }, []);
  const onDrop = useCallback(
    (e: DragEvent) => {
      const type = e.dataTransfer.getData(DND_MIME);
      const yamlKind = e.dataTransfer.getData(YAML_DND_MIME);
      if (yamlKind) {
        e.preventDefault();
        const p = rf.screenToFlowPosition({ x: e.clientX, y: e.clientY });
        void useYamlFile
          .getState()
          .addNode(yamlKind as YamlNodeKind, { x: p.x - 110, y: p.y - 30 })
          .catch((err) => useApp.getState().toast(`Could not add the step: ${errorMessage(err)}`, 'error'));
        return;
      }
      if (!isEditableType(type)) return;
      e.preventDefault();
      const p = rf.screenToFlowPosition({ x: e.clientX, y: e.clientY });
      useEditor.getState().addNode(type, { x: p.x - 110, y: p.y - 30 });
    },
    [rf],
  );
  const onNodeClick: NodeMouseHandler<FlowNode> = useCallback((_, n) => {
    if (!isGroupNodeId(n.id)) onNodeActivate(n.id);
  }, [onNodeActivate]);
  const pickNode = useCallback(
    (id: string) => {
      useEditor.getState().selectOnly(id);
      onNodeActivate(id);
    },
    [onNodeActivate],
  );

  return (
    <CanvasModeContext.Provider value="edit">
      <div className={`sy-canvas${far}`} data-testid="canvas" onDragOver={onDragOver} onDrop={onDrop} onPointerDownCapture={markMoved}>
        <EdgeMarkers />
        <MovedContext.Provider value={markMoved}>
        <RoutesProvider nodes={nodes} edges={edges}>
        <ReactFlow<FlowNode>
          onMoveStart={onMoveStart}
          nodes={nodes}
          edges={edges}
          nodeTypes={nodeTypes}
          edgeTypes={edgeTypes}
          onNodesChange={onNodesChange}
          onEdgesChange={onEdgesChange}
          onConnect={connect}
          isValidConnection={yamlMode ? isValidYamlConnection : isValidConnection}
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
          minZoom={0.05}
          maxZoom={2}
          proOptions={PRO}
          aria-label="Workflow canvas"
        >
          <Background variant={BackgroundVariant.Dots} gap={16} size={1} />
          <ZoomControls />
          <SmartMiniMap count={nodes.length} />
        </ReactFlow>
        </RoutesProvider>
        </MovedContext.Provider>
        <CanvasSearch nodes={stored} onPick={pickNode} />
      </div>
    </CanvasModeContext.Provider>
  );
}

/**
 * Brings a node that starts waiting on a tool call into view once its
 * card (arguments, diff, buttons) has made it taller: the reviewer should
 * not have to hunt for the buttons below the fold.
 */
function useRevealToolApprovals() {
  const rf = useReactFlow();
  const keys = useRun((s) =>
    s.replay
      ? ''
      : (s.run?.pendingApprovals ?? [])
          .filter((p) => p.tool)
          .map((p) => `${p.nodeId}\u0000${p.tool!.callId}`)
          .join('\u0001'),
  );
  const ids = useMemo(() => (keys ? keys.split('\u0001').map((k) => k.split('\u0000')[0]!) : []), [keys]);
  const sizes = useRun((s) =>
    ids
      .map((id) => {
        const m = s.nodes.find((n) => n.id === id)?.measured;
        return `${m?.width ?? 0}x${m?.height ?? 0}`;
      })
      .join(','),
  );
  // Waits seen, with the node's size when the wait appeared (null once shown).
  const seen = useRef(new Map<string, string | null>());
  useEffect(() => {
    const list = keys ? keys.split('\u0001') : [];
    const size = sizes.split(',');
    const reveal: string[] = [];
    list.forEach((k, i) => {
      const before = seen.current.get(k);
      if (before === undefined) seen.current.set(k, size[i] ?? '');
      else if (before !== null && before !== size[i]) {
        seen.current.set(k, null);
        reveal.push(k.split('\u0000')[0]!);
      }
    });
    if (reveal.length === 0) return;
    const zoom = rf.getZoom();
    void rf.fitView({ nodes: reveal.map((id) => ({ id })), padding: 0.1, maxZoom: zoom, minZoom: Math.min(zoom, 0.5), duration: 200 });
  }, [keys, sizes, rf]);
}

export function RunCanvas() {
  const stored = useRun((s) => s.nodes);
  const nodes = useMemo(() => withGroups(stored), [stored]);
  const edges = useRun((s) => s.edges);
  const onStoreNodesChange = useRun((s) => s.onNodesChange);
  const onNodesChange = useCallback((c: NodeChange<FlowNode>[]) => onStoreNodesChange(storedOnly(c)), [onStoreNodesChange]);
  const select = useRun((s) => s.select);
  const fitRequest = useRun((s) => s.fitRequest);
  const colorMode = useColorMode();
  const far = useFarClass();
  const { onMoveStart, markMoved } = useAutoFit(fitRequest);
  const fitNow = useFit();
  useZoomKeys(fitNow, markMoved);
  useRevealToolApprovals();
  const onNodeClick: NodeMouseHandler<FlowNode> = useCallback((_, n) => select(isGroupNodeId(n.id) ? null : n.id), [select]);
  const onPaneClick = useCallback(() => select(null), [select]);
  const [menu, setMenu] = useState<{ id: string; x: number; y: number } | null>(null);
  const closeMenu = useCallback(() => setMenu(null), []);
  const onNodeContextMenu: NodeMouseHandler<FlowNode> = useCallback(
    (e, n) => {
      if (isGroupNodeId(n.id)) return;
      e.preventDefault();
      select(n.id);
      setMenu({ id: n.id, x: e.clientX, y: e.clientY });
    },
    [select],
  );
  return (
    <CanvasModeContext.Provider value="run">
      <div className={`sy-canvas${far}`} data-testid="run-canvas" onPointerDownCapture={markMoved}>
        <EdgeMarkers />
        <MovedContext.Provider value={markMoved}>
        <RoutesProvider nodes={nodes} edges={edges}>
        <ReactFlow<FlowNode>
          onMoveStart={onMoveStart}
          nodes={nodes}
          edges={edges}
          nodeTypes={nodeTypes}
          edgeTypes={edgeTypes}
          onNodesChange={onNodesChange}
          onNodeClick={onNodeClick}
          onNodeContextMenu={onNodeContextMenu}
          onPaneClick={onPaneClick}
          nodesDraggable={false}
          nodesConnectable={false}
          edgesFocusable={false}
          deleteKeyCode={null}
          onlyRenderVisibleElements={nodes.length > VISIBLE_ONLY_THRESHOLD}
          colorMode={colorMode}
          minZoom={0.05}
          maxZoom={2}
          proOptions={PRO}
          aria-label="Run graph"
        >
          <Background variant={BackgroundVariant.Dots} gap={16} size={1} />
          <ZoomControls />
          <SmartMiniMap count={nodes.length} />
        </ReactFlow>
        </RoutesProvider>
        </MovedContext.Provider>
        <CanvasSearch nodes={stored} onPick={select} />
        {menu && <NodeMenu nodeId={menu.id} x={menu.x} y={menu.y} onClose={closeMenu} />}
      </div>
    </CanvasModeContext.Provider>
  );
}
