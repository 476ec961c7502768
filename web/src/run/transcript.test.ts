import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../api/types';
import { applyEvents, emptyRunLog, nodeMeta } from './reducer';
import { diffLines, fmtBytes, prettyArgs, sessionLabel, sessionsOf, toolName, transcriptTree, type TranscriptCall } from './transcript';

let seq = 0;
function ev(nodeId: string, type: string, content = '', data?: Record<string, unknown>): RunEvent {
  const s = ++seq;
  return { seq: s, runId: 'r1', nodeId, type, content, timestamp: `2026-01-01T00:00:${String(s % 60).padStart(2, '0')}Z`, data };
}

/**
 * What the engine logs for a drawn agent "a" (session "1") that reads a
 * file, runs a Bash command that streams output, asks a subagent (whose own
 * loop reads a file), then writes a file a reviewer must approve.
 */
function agentRun(): RunEvent[] {
  seq = 0;
  const sub = '1/call_3';
  return [
    ev('system', 'run_status', 'running'),
    ev('a', 'step_start', '', { visit: 1 }),
    ev('a', 'llm_delta', 'Let me look'),
    ev('a', 'llm_delta', ' at the code.'),
    ev('a', 'llm_turn', 'Let me look at the code.', { session: '1', turn: 1, toolCalls: 2 }),
    ev('a', 'tool_call', 'Read calc.sh', { session: '1', turn: 1, callId: 'call_1', tool: 'Read', arguments: { file_path: 'calc.sh' } }),
    ev('a', 'tool_call', 'Bash: ./test.sh', { session: '1', turn: 1, callId: 'call_2', tool: 'Bash', arguments: { command: './test.sh' } }),
    ev('a', 'tool_result', '1\techo $((a - b))', { session: '1', turn: 1, callId: 'call_1', tool: 'Read', ok: true, bytes: 17, durationMs: 2 }),
    ev('a', 'output', 'running tests', { stream: 'stdout' }),
    ev('a', 'output', 'FAIL: 1 + 2 = -1', { stream: 'stdout' }),
    ev('a', 'tool_result', 'running tests\nFAIL: 1 + 2 = -1\nexit status 1', {
      session: '1',
      turn: 1,
      callId: 'call_2',
      tool: 'Bash',
      ok: false,
      bytes: 40000,
      cut: true,
      durationMs: 1250,
    }),
    ev('a', 'llm_turn', '', { session: '1', turn: 2, toolCalls: 1 }),
    ev('a', 'tool_call', 'subagent_fixer_n3', { session: '1', turn: 2, callId: 'call_3', tool: 'subagent_fixer_n3', arguments: { input: 'fix it' } }),
    ev(
      'a',
      'subagent_call_start',
      JSON.stringify({ parentNodeId: 'a', subagentNodeId: 'n3', subagentName: 'Fixer', callId: sub, depth: 1, message: 'fix it' }),
    ),
    ev('a', 'llm_turn', 'Reading.', { session: sub, turn: 1, toolCalls: 1, parentCallId: sub }),
    ev('a', 'tool_call', 'Read calc.sh', { session: sub, turn: 1, callId: 'call_9', tool: 'Read', arguments: { file_path: 'calc.sh' }, parentCallId: sub }),
    ev('a', 'tool_result', 'echo', { session: sub, turn: 1, callId: 'call_9', tool: 'Read', ok: true, bytes: 4, durationMs: 1, parentCallId: sub }),
    ev(
      'a',
      'subagent_call_end',
      JSON.stringify({ parentNodeId: 'a', subagentNodeId: 'n3', subagentName: 'Fixer', callId: sub, depth: 1, message: 'use +' }),
    ),
    ev('a', 'tool_result', 'use +', { session: '1', turn: 2, callId: 'call_3', tool: 'subagent_fixer_n3', ok: true, bytes: 5, durationMs: 900 }),
    ev('a', 'llm_turn', 'Fixing.', { session: '1', turn: 3, toolCalls: 1 }),
    ev('a', 'tool_call', 'Write calc.sh', {
      session: '1',
      turn: 3,
      callId: 'call_4',
      tool: 'Write',
      arguments: { file_path: 'calc.sh', content: 'echo $((a + b))' },
    }),
    ev('a', 'wait_input', 'Allow Write calc.sh?', {
      input: 'fix calc',
      tool: { callId: 'call_4', tool: 'Write', arguments: { file_path: 'calc.sh' }, diff: '--- a/calc.sh\n+++ b/calc.sh\n@@ -1 +1 @@\n-a - b\n+a + b\n' },
    }),
    ev('system', 'run_status', 'paused'),
  ];
}

function answer(decision: 'approve' | 'reject', note: string): RunEvent[] {
  return [
    ev('system', 'run_status', 'running'),
    ev('a', 'input_received', `${decision === 'approve' ? 'Approved' : 'Rejected'} Write calc.sh${note ? `: ${note}` : ''}`, {
      decision,
      note,
      callId: 'call_4',
      tool: 'Write',
      session: '1',
    }),
    ev('a', 'tool_result', decision === 'approve' ? 'wrote calc.sh' : `denied by the reviewer: ${note}`, {
      session: '1',
      turn: 3,
      callId: 'call_4',
      tool: 'Write',
      ok: decision === 'approve',
      denied: decision === 'reject',
      bytes: 13,
      durationMs: 3,
    }),
    ev('a', 'llm_response', 'Done.', { usage: { totalTokens: 50 } }),
    ev('a', 'step_end', '', { status: 'completed', output: 'Done.', durationMs: 4000 }),
    ev('system', 'run_status', 'completed'),
  ];
}

const calls = (log: ReturnType<typeof applyEvents>, node = 'a') =>
  (log.transcripts[node]?.items ?? []).filter((i): i is TranscriptCall => i.kind === 'call');

describe('tool transcript', () => {
  it('collects turns and calls with their results, live output and a waiting call', () => {
    const log = applyEvents(emptyRunLog(), agentRun());
    const c = calls(log);
    expect(c.map((x) => [x.callId, x.tool, x.status, x.parent])).toEqual([
      ['call_1', 'Read', 'ok', null],
      ['call_2', 'Bash', 'error', null],
      ['call_3', 'subagent_fixer_n3', 'ok', null],
      ['call_9', 'Read', 'ok', '1/call_3'],
      ['call_4', 'Write', 'waiting', null],
    ]);
    expect(c[1]).toMatchObject({ bytes: 40000, cut: true, durationMs: 1250, summary: 'Bash: ./test.sh', live: '' });
    expect(c[0]!.args).toEqual({ file_path: 'calc.sh' });
    expect(log.nodes.a).toMatchObject({ status: 'waiting', toolCalls: 5, waitTool: { callId: 'call_4', tool: 'Write', prompt: 'Allow Write calc.sh?' } });
    // A turn's streamed text is the turn's, not the node's answer.
    expect(log.nodes.a!.text).toBe('');
    expect(nodeMeta(log.nodes.a)).toBe('5 tool calls');
    const done = applyEvents(log, answer('approve', ''));
    expect(nodeMeta(done.nodes.a)).toBe('4.0 s · 5 tool calls · 50 tok');
  });

  it('shows what a running Bash call streamed until its result comes', () => {
    const evs = agentRun();
    const upTo = evs.findIndex((e) => e.type === 'tool_result' && e.data?.callId === 'call_2');
    const log = applyEvents(emptyRunLog(), evs.slice(0, upTo));
    expect(calls(log)[1]).toMatchObject({ status: 'running', live: 'running tests\nFAIL: 1 + 2 = -1\n', result: null });
  });

  it('nests a subagent turns under the call that started it', () => {
    const log = applyEvents(emptyRunLog(), agentRun());
    const tree = transcriptTree(log.transcripts.a!);
    expect(tree.map((t) => [t.session, t.turnNo, t.turn?.text, t.calls.map((c) => c.call.callId)])).toEqual([
      ['1', 1, 'Let me look at the code.', ['call_1', 'call_2']],
      ['1', 2, '', ['call_3']],
      ['1', 3, 'Fixing.', ['call_4']],
    ]);
    const sub = tree[1]!.calls[0]!;
    expect(sub.children.map((t) => [t.session, t.turn?.text, t.calls.map((c) => c.call.callId)])).toEqual([['1/call_3', 'Reading.', ['call_9']]]);
    expect(sessionsOf(tree)).toEqual(['1']);
  });

  it('records an approval and the result that follows it', () => {
    const log = applyEvents(applyEvents(emptyRunLog(), agentRun()), answer('approve', 'ok'));
    const w = calls(log)[4]!;
    expect(w).toMatchObject({ status: 'ok', decision: { decision: 'approve', note: 'ok' }, result: 'wrote calc.sh' });
    expect(log.nodes.a).toMatchObject({ status: 'completed', waitTool: null, text: 'Done.', tokens: 50 });
  });

  it('marks a rejected call denied, with the note the model got', () => {
    const log = applyEvents(applyEvents(emptyRunLog(), agentRun()), answer('reject', 'not that file'));
    const w = calls(log)[4]!;
    expect(w).toMatchObject({ status: 'denied', decision: { decision: 'reject', note: 'not that file' }, result: 'denied by the reviewer: not that file' });
    const line = log.lines.find((l) => l.type === 'tool_result' && l.seq === log.lastSeq - 3)!;
    expect(line).toMatchObject({ status: 'denied', meta: 'Write · denied · 3 ms · 13 B' });
  });

  it('is the same built live, event by event, as from the stored log at once (reload, replay)', () => {
    const all = [...agentRun(), ...answer('approve', '')];
    let live = emptyRunLog();
    for (const e of all) live = applyEvents(live, [e]);
    // Live streams come in uneven batches, with replayed overlaps.
    let chunked = emptyRunLog();
    for (let i = 0; i < all.length; i += 3) chunked = applyEvents(chunked, all.slice(Math.max(0, i - 2), i + 3));
    const stored = applyEvents(emptyRunLog(), all);
    expect(live.transcripts).toEqual(stored.transcripts);
    expect(chunked.transcripts).toEqual(stored.transcripts);
    expect(live.lines).toEqual(stored.lines);
    expect(live.nodes).toEqual(stored.nodes);
  });

  it('leaves the previous log untouched and shares what did not change', () => {
    const evs = agentRun();
    const before = applyEvents(emptyRunLog(), evs.slice(0, 8));
    const snapshot = structuredClone(before.transcripts);
    const after = applyEvents(before, evs.slice(8, 12));
    expect(before.transcripts).toEqual(snapshot);
    expect(after.transcripts.a!.items[1]).toBe(before.transcripts.a!.items[1]); // the turn item, unchanged
    // Events that touch no transcript keep the same map.
    const again = applyEvents(after, [ev('b', 'step_start')]);
    expect(again.transcripts).toBe(after.transcripts);
  });

  it('stops calls left open when the run ends', () => {
    const evs = agentRun();
    const cut = evs.findIndex((e) => e.type === 'tool_result' && e.data?.callId === 'call_2');
    const log = applyEvents(emptyRunLog(), [...evs.slice(0, cut), ev('system', 'run_status', 'cancelled')]);
    expect(calls(log).map((c) => c.status)).toEqual(['ok', 'stopped']);
  });

  it('gives tool events their own log lines, nested under the node', () => {
    const log = applyEvents(emptyRunLog(), agentRun());
    const tool = log.lines.filter((l) => ['llm_turn', 'tool_call', 'tool_result'].includes(l.type));
    expect(tool.map((l) => [l.type, l.depth])).toEqual([
      ['llm_turn', 0],
      ['tool_call', 1],
      ['tool_call', 1],
      ['tool_result', 1],
      ['tool_result', 1],
      ['llm_turn', 0],
      ['tool_call', 1],
      ['llm_turn', 1],
      ['tool_call', 2],
      ['tool_result', 2],
      ['tool_result', 1],
      ['llm_turn', 0],
      ['tool_call', 1],
    ]);
    // A Bash call's streamed output is nested under it too.
    expect(log.lines.filter((l) => l.type === 'output').map((l) => l.depth)).toEqual([1, 1]);
    // The streamed line became the first turn's line: no duplicate text.
    expect(log.lines.filter((l) => l.content === 'Let me look at the code.')).toHaveLength(1);
    expect(log.lines.find((l) => l.type === 'llm_turn')).toMatchObject({ streaming: false, meta: 'turn 1 · 2 tool calls' });
    expect(log.lines.find((l) => l.type === 'tool_result' && l.status === 'error')!.meta).toBe('Bash · error · 1.3 s · 39 KB · cut');
  });

  it('labels visits and loop iterations when a node ran more than once', () => {
    seq = 0;
    const log = applyEvents(emptyRunLog(), [
      ev('y', 'llm_turn', 'a', { session: '1/i1', turn: 1, toolCalls: 1 }),
      ev('y', 'tool_call', 'LS', { session: '1/i1', turn: 1, callId: 'c', tool: 'LS', arguments: {} }),
      ev('y', 'llm_turn', 'b', { session: '1/i2', turn: 1, toolCalls: 1 }),
      ev('y', 'tool_call', 'LS', { session: '1/i2', turn: 1, callId: 'c', tool: 'LS', arguments: {} }),
      ev('y', 'tool_result', 'x', { session: '1/i2', turn: 1, callId: 'c', tool: 'LS', ok: true, bytes: 1, durationMs: 1 }),
    ]);
    const tree = transcriptTree(log.transcripts.y!);
    expect(sessionsOf(tree).map(sessionLabel)).toEqual(['Visit 1 · iteration 1', 'Visit 1 · iteration 2']);
    // Same call id in two sessions: two calls, each with its own result.
    expect(tree.map((t) => t.calls[0]!.call.status)).toEqual(['running', 'ok']);
  });

  it('creates no transcript for a bash node that only streams output', () => {
    seq = 0;
    const log = applyEvents(emptyRunLog(), [ev('sh', 'step_start'), ev('sh', 'output', 'hi', { stream: 'stdout' })]);
    expect(log.transcripts).toEqual({});
    expect(log.lines[1]!.depth).toBe(0);
  });
});

describe('tool display helpers', () => {
  it('names MCP tools and subagents', () => {
    expect(toolName('mcp__github__create_issue')).toEqual({ kind: 'mcp', label: 'create_issue', server: 'github' });
    expect(toolName('subagent_code_reviewer_n12')).toEqual({ kind: 'subagent', label: 'code reviewer' });
    expect(toolName('Bash')).toEqual({ kind: 'builtin', label: 'Bash' });
  });

  it('formats sizes and arguments', () => {
    expect([fmtBytes(840), fmtBytes(1234), fmtBytes(40000), fmtBytes(3.5 * 1024 * 1024)]).toEqual(['840 B', '1.2 KB', '39 KB', '3.5 MB']);
    expect(prettyArgs({ a: 1 })).toBe('{\n  "a": 1\n}');
    expect(prettyArgs('{"broken"')).toBe('{"broken"');
    expect(prettyArgs(null)).toBe('{}');
  });

  it('classifies unified diff lines, headers only before a hunk', () => {
    const d = diffLines('--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n keep\n--- old rule\n+++ new rule\n-a\n+b\n\\ No newline at end of file\n');
    expect(d.map((l) => l.kind)).toEqual(['meta', 'meta', 'hunk', 'ctx', 'del', 'add', 'del', 'add', 'meta']);
    expect(diffLines('--- a/big\n+++ b/big\n(4000 lines -> 4001 lines; too large to show line by line)\n').map((l) => l.kind)).toEqual([
      'meta',
      'meta',
      'ctx',
    ]);
  });
});
