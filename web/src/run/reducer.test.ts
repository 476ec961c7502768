import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../api/types';
import { applyEvents, childCalls, edgeFired, emptyRunLog, nodeMeta, topLevelCalls } from './reducer';

let seq = 0;
function ev(nodeId: string, type: string, content = '', data?: Record<string, unknown>, at?: number): RunEvent {
  const s = at ?? ++seq;
  return { seq: s, runId: 'r1', nodeId, type, content, timestamp: `2026-01-01T00:00:${String(s % 60).padStart(2, '0')}Z`, data };
}
const call = (type: string, o: Record<string, unknown>) => ev('lead', type, JSON.stringify(o));

describe('applyEvents', () => {
  it('drives node states through a run', () => {
    seq = 0;
    const log = applyEvents(emptyRunLog(), [
      ev('system', 'run_status', 'running'),
      ev('n1', 'step_start'),
      ev('n1', 'step_end', '', { status: 'completed', output: 'hello' }),
      ev('n2', 'step_start'),
      ev('n2', 'start_prompt', 'Say hi: hello'),
      ev('n2', 'llm_delta', 'Hi'),
      ev('n2', 'llm_delta', ' there'),
    ]);
    expect(log.runStatus).toBe('running');
    expect(log.nodes.n1).toMatchObject({ status: 'completed', output: 'hello' });
    expect(log.nodes.n2).toMatchObject({ status: 'running', prompt: 'Say hi: hello', text: 'Hi there' });
    expect(log.nodes.system).toBeUndefined();
    expect(log.lastSeq).toBe(7);
  });

  it('merges deltas into one streaming log line and finalizes it with the full response', () => {
    seq = 0;
    let log = applyEvents(emptyRunLog(), [ev('a', 'step_start'), ev('a', 'llm_delta', 'Hel')]);
    log = applyEvents(log, [ev('a', 'llm_delta', 'lo'), ev('b', 'llm_delta', 'other')]);
    expect(log.lines.map((l) => [l.type, l.content, l.streaming])).toEqual([
      ['step_start', '', false],
      ['llm_delta', 'Hello', true],
      ['llm_delta', 'other', true],
    ]);
    log = applyEvents(log, [ev('a', 'llm_response', 'Hello!'), ev('a', 'step_end', '', { status: 'completed' })]);
    expect(log.lines.map((l) => [l.nodeId, l.type, l.content, l.streaming])).toEqual([
      ['a', 'step_start', '', false],
      ['a', 'llm_response', 'Hello!', false],
      ['b', 'llm_delta', 'other', true],
      ['a', 'step_end', '', false],
    ]);
    expect(log.nodes.a!.text).toBe('Hello!');
  });

  it('drops events it has already applied (replay after reconnect)', () => {
    seq = 0;
    const first = [ev('a', 'step_start'), ev('a', 'llm_delta', 'x'), ev('a', 'llm_delta', 'y')];
    const log1 = applyEvents(emptyRunLog(), first);
    // Reconnect replays from seq 2 (overlap) plus one new event.
    const log2 = applyEvents(log1, [first[1]!, first[2]!, ev('a', 'llm_delta', 'z')]);
    expect(log2.nodes.a!.text).toBe('xyz');
    expect(log2.lines).toHaveLength(2);
    // A pure replay changes nothing at all.
    expect(applyEvents(log2, first)).toBe(log2);
  });

  it('orders a batch by seq and ignores duplicates inside it', () => {
    const e1 = ev('a', 'llm_delta', '1', undefined, 1);
    const e2 = ev('a', 'llm_delta', '2', undefined, 2);
    const e3 = ev('a', 'llm_delta', '3', undefined, 3);
    const log = applyEvents(emptyRunLog(), [e3, e1, e2, e2]);
    expect(log.nodes.a!.text).toBe('123');
    expect(log.lastSeq).toBe(3);
  });

  it('keeps unchanged node states identical so their canvas nodes do not re-render', () => {
    seq = 0;
    const log1 = applyEvents(emptyRunLog(), [ev('a', 'step_start'), ev('b', 'step_start')]);
    const log2 = applyEvents(log1, [ev('a', 'llm_delta', 'x')]);
    expect(log2.nodes.b).toBe(log1.nodes.b);
    expect(log2.nodes.a).not.toBe(log1.nodes.a);
    expect(log1.nodes.a!.text).toBe(''); // previous state untouched
    expect(log2.lines[1]).toBe(log1.lines[1]);
  });

  it('marks waiting, skipped and failed states, collects errors', () => {
    seq = 0;
    const log = applyEvents(emptyRunLog(), [
      ev('ap', 'step_start'),
      ev('ap', 'wait_input', 'Approve?'),
      ev('x', 'step_end', '', { status: 'skipped' }),
      ev('y', 'step_start'),
      ev('y', 'llm_error', 'rate limited'),
      ev('y', 'step_end', '', { status: 'failed', error: 'gave up' }),
    ]);
    expect(log.nodes.ap!.status).toBe('waiting');
    expect(log.nodes.x!.status).toBe('skipped');
    expect(log.nodes.y).toMatchObject({ status: 'failed', errors: ['rate limited', 'gave up'] });
    const after = applyEvents(log, [ev('ap', 'input_received', 'approve'), ev('ap', 'step_end', '', { status: 'completed' })]);
    expect(after.nodes.ap!.status).toBe('completed');
  });

  it('keeps the note of an approval decision on its log line, once', () => {
    seq = 0;
    const log = applyEvents(emptyRunLog(), [
      ev('a', 'input_received', 'User approved this step.', { decision: 'approve', note: 'ship it' }),
      ev('b', 'input_received', 'User rejected this step. Feedback: too long', { decision: 'reject', note: 'too long' }),
      ev('c', 'input_received', 'User approved this step.', { decision: 'approve', note: '' }),
    ]);
    expect(log.lines.map((l) => l.note)).toEqual(['ship it', undefined, undefined]);
  });

  it('stops nodes left active when the run ends', () => {
    seq = 0;
    const log = applyEvents(emptyRunLog(), [ev('a', 'step_start'), ev('b', 'wait_input'), ev('system', 'run_status', 'cancelled')]);
    expect(log.nodes.a!.status).toBe('stopped');
    expect(log.nodes.b!.status).toBe('stopped');
    expect(log.runStatus).toBe('cancelled');
    const streaming = applyEvents(emptyRunLog(), [ev('a', 'llm_delta', 'x', undefined, 1), ev('system', 'run_status', 'completed', undefined, 2)]);
    expect(streaming.lines[0]!.streaming).toBe(false);
    const failed = applyEvents(emptyRunLog(), [ev('a', 'step_start', '', undefined, 1), ev('system', 'run_status', 'failed', undefined, 2)]);
    expect(failed.nodes.a!.status).toBe('failed');
  });

  it('shows a node cut short by Cancel as stopped, not failed', () => {
    seq = 0;
    // What the engine emits for the node running when the run is cancelled.
    const log = applyEvents(emptyRunLog(), [
      ev('a', 'step_start'),
      ev('system', 'warning', 'run cancelled by user'),
      ev('a', 'step_end', 'cancelled', { status: 'failed', error: 'cancelled' }),
      ev('b', 'step_start'),
      ev('b', 'step_end', 'failed', { status: 'failed', error: 'boom' }),
      ev('system', 'run_status', 'cancelled'),
    ]);
    expect(log.nodes.a).toMatchObject({ status: 'stopped', errors: [] });
    expect(log.nodes.b).toMatchObject({ status: 'failed', errors: ['boom'] });
  });

  it('builds the subagent call tree and nests its log lines', () => {
    seq = 0;
    const log = applyEvents(emptyRunLog(), [
      ev('lead', 'step_start'),
      call('subagent_call_start', { parentNodeId: 'lead', subagentNodeId: 'sights', subagentName: 'Sights', callId: 'c1', depth: 1, message: 'find sights' }),
      call('subagent_call_start', { parentNodeId: 'sights', subagentNodeId: 'museums', subagentName: 'Museums', callId: 'c2', parentCallId: 'c1', depth: 2 }),
      ev('museums', 'llm_delta', 'Gulbenkian'),
      call('subagent_call_end', { parentNodeId: 'sights', subagentNodeId: 'museums', callId: 'c2', parentCallId: 'c1', depth: 2, message: 'Gulbenkian' }),
      call('subagent_call_error', { parentNodeId: 'lead', subagentNodeId: 'sights', callId: 'c1', depth: 1, message: 'timeout' }),
      call('subagent_call_start', { parentNodeId: 'lead', subagentNodeId: 'food', callId: 'c3', depth: 1 }),
    ]);
    const top = topLevelCalls(log, 'lead');
    expect(top.map((c) => [c.callId, c.status])).toEqual([
      ['c1', 'failed'],
      ['c3', 'running'],
    ]);
    expect(childCalls(log, 'c1').map((c) => [c.callId, c.status, c.result])).toEqual([['c2', 'completed', 'Gulbenkian']]);
    expect(log.nodes.museums).toMatchObject({ status: 'completed', output: 'Gulbenkian', activeCalls: 0 });
    expect(log.nodes.sights).toMatchObject({ status: 'failed', errors: ['timeout'] });
    expect(log.nodes.food!.status).toBe('running');
    const museumLine = log.lines.find((l) => l.nodeId === 'museums')!;
    expect(museumLine.depth).toBe(2);
    // Its text stream closed with the call.
    expect(museumLine.streaming).toBe(false);
    expect(log.openStream.museums).toBeUndefined();
    expect(log.lines.filter((l) => l.type.startsWith('subagent_call_')).map((l) => l.depth)).toEqual([1, 2, 2, 1, 1]);
  });

  it('logs malformed subagent payloads without crashing', () => {
    const log = applyEvents(emptyRunLog(), [ev('lead', 'subagent_call_start', 'not json', undefined, 1)]);
    expect(log.lines).toHaveLength(1);
    expect(log.callOrder).toHaveLength(0);
  });
});

describe('run facts', () => {
  it('counts visits, durations, tokens and the handles fired', () => {
    seq = 0;
    const log = applyEvents(emptyRunLog(), [
      ev('w', 'step_start', '', { visit: 1 }),
      ev('w', 'llm_response', 'draft', { model: 'm', usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 } }),
      ev('w', 'step_end', '', { status: 'completed', durationMs: 1200, visit: 1 }),
      ev('ok', 'step_start', '', { visit: 1 }),
      ev('ok', 'step_end', '', { status: 'completed', durationMs: 3, handle: 'reject', visit: 1 }),
      ev('w', 'step_start', '', { visit: 2 }),
      ev('w', 'llm_response', 'draft 2', { usage: { totalTokens: 20 } }),
      ev('w', 'step_end', '', { status: 'completed', durationMs: 800, visit: 2 }),
      ev('ok', 'step_start', '', { visit: 2 }),
      ev('ok', 'step_end', '', { status: 'completed', durationMs: 2, handle: 'approve', visit: 2 }),
    ]);
    expect(log.nodes.w).toMatchObject({ visits: 2, durationMs: 800, totalMs: 2000, tokens: 35, fired: [''] });
    expect(log.nodes.ok!.fired).toEqual(['reject', 'approve']);
    expect(nodeMeta(log.nodes.w)).toBe('×2 · 800 ms · 35 tok');
    expect(nodeMeta(log.nodes.ok)).toBe('×2 · 2 ms');
    expect(edgeFired(log, { source: 'w', target: 'ok', sourceHandle: 'output' })).toBe(true);
    expect(edgeFired(log, { source: 'ok', target: 'pub', sourceHandle: 'approve' })).toBe(true);
    expect(edgeFired(log, { source: 'ok', target: 'x', sourceHandle: 'condition-0' })).toBe(false);
    expect(edgeFired(log, { source: 'pub', target: 'y', sourceHandle: 'output' })).toBe(false);
  });

  it('gives a subagent the tokens of its calls, and fires the subagent edge', () => {
    seq = 0;
    const info = { parentNodeId: 'lead', subagentNodeId: 'res', subagentName: 'Researcher', callId: 'c1', depth: 1 };
    const log = applyEvents(emptyRunLog(), [
      call('subagent_call_start', { ...info, message: 'look' }),
      ev('lead', 'subagent_call_end', JSON.stringify({ ...info, message: 'found' }), { usage: { totalTokens: 42 } }),
    ]);
    expect(log.nodes.res!.tokens).toBe(42);
    expect(edgeFired(log, { source: 'lead', target: 'res', subagent: true })).toBe(true);
    expect(edgeFired(log, { source: 'lead', target: 'other', subagent: true })).toBe(false);
  });
});

describe('skipped nodes', () => {
  it('keep the reason the engine gave (step_end data.reason), on the node and its log line', () => {
    seq = 0;
    const log = applyEvents(emptyRunLog(), [
      ev('check', 'step_end', 'skipped', { status: 'skipped', reason: 'when condition "$a.output == \'x\'" is false' }),
      ev('b', 'step_end', 'skipped', { status: 'skipped' }),
    ]);
    expect(log.nodes.check).toMatchObject({ status: 'skipped', skipReason: 'when condition "$a.output == \'x\'" is false' });
    expect(log.nodes.b).toMatchObject({ status: 'skipped', skipReason: null });
    expect(log.lines[0]).toMatchObject({ type: 'step_end', status: 'skipped', meta: 'when condition "$a.output == \'x\'" is false' });
  });
});

describe('approval rounds', () => {
  it('keep the last rejection note until the node is approved', () => {
    seq = 0;
    let log = applyEvents(emptyRunLog(), [
      ev('ok', 'wait_input', 'Ship it?'),
      ev('ok', 'input_received', 'User rejected this step. Feedback: shorter please', { decision: 'reject', note: 'shorter please' }),
    ]);
    expect(log.nodes.ok!.lastRejection).toBe('shorter please');
    log = applyEvents(log, [ev('ok', 'wait_input', 'Ship it?')]);
    expect(log.nodes.ok!.lastRejection).toBe('shorter please');
    log = applyEvents(log, [ev('ok', 'input_received', 'User approved this step.', { decision: 'approve', note: '' })]);
    expect(log.nodes.ok!.lastRejection).toBeNull();
  });
  it("a tool call's decision is not the node's", () => {
    seq = 0;
    const log = applyEvents(emptyRunLog(), [ev('a', 'input_received', 'denied', { decision: 'reject', note: 'no', callId: 'c1' })]);
    expect(log.nodes.a!.lastRejection).toBeNull();
  });
});
