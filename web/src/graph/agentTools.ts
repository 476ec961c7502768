// A drawn agent's tools (data.tools): the switches it always had
// (web_search, subagents) plus the built-in tools it may call, the tool
// patterns whose calls wait for a reviewer and the MCP servers it uses.
// Every change returns a new object and touches only the key it changes;
// a list that becomes empty is removed, so a graph that never used these
// fields is saved as it was.
import type { AgentTools } from './types';

export const BUILTIN_TOOLS = ['Read', 'Write', 'Edit', 'Glob', 'Grep', 'Bash', 'LS'] as const;
export type BuiltinTool = (typeof BUILTIN_TOOLS)[number];

export const BUILTIN_HINTS: Record<BuiltinTool, string> = {
  Read: 'read files',
  Write: 'create or overwrite files',
  Edit: 'replace text in files',
  Glob: 'find files by name pattern',
  Grep: 'search file contents',
  Bash: 'run shell commands',
  LS: 'list a directory',
};

type ListKey = 'builtin' | 'approve' | 'mcp';

function list(t: AgentTools | undefined, k: ListKey): string[] {
  const v = t?.[k];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function withList(t: AgentTools | undefined, k: ListKey, v: string[]): AgentTools {
  const next: AgentTools = { ...(t ?? {}) };
  if (v.length === 0) delete next[k];
  else next[k] = v;
  return next;
}

/** The built-in tools the checklist offers: the server's list (GET /api/config builtinTools), else ours. */
export function knownBuiltins(fromServer: readonly string[] | undefined): readonly string[] {
  return fromServer && fromServer.length > 0 ? fromServer : BUILTIN_TOOLS;
}

export const builtinOf = (t: AgentTools | undefined) => list(t, 'builtin');
export const approveOf = (t: AgentTools | undefined) => list(t, 'approve');
export const mcpOf = (t: AgentTools | undefined) => list(t, 'mcp');

/**
 * Turns a built-in tool on or off (kept in the checklist's order; names
 * the UI does not know stay, after them). Turning one off also drops its
 * "needs approval" entry: a tool the agent cannot call needs no reviewer.
 */
export function setBuiltin(t: AgentTools | undefined, name: string, on: boolean, known: readonly string[] = BUILTIN_TOOLS): AgentTools {
  const cur = builtinOf(t);
  if (cur.includes(name) === on) return t ?? {};
  const listed = known.filter((b) => (b === name ? on : cur.includes(b)));
  const unknown = cur.filter((b) => !known.includes(b) && (b !== name || on));
  if (on && !known.includes(name)) unknown.push(name);
  let next = withList(t, 'builtin', [...listed, ...unknown]);
  if (!on && approveOf(t).includes(name)) next = withList(next, 'approve', approveOf(t).filter((p) => p !== name));
  return next;
}

/** Whether every call of this built-in waits for a reviewer (its bare name is an approval pattern). */
export function needsApproval(t: AgentTools | undefined, name: string): boolean {
  return approveOf(t).includes(name);
}

export function setNeedsApproval(t: AgentTools | undefined, name: string, on: boolean, known: readonly string[] = BUILTIN_TOOLS): AgentTools {
  const cur = approveOf(t);
  if (cur.includes(name) === on) return t ?? {};
  const names = known.includes(name) ? known : [...known, name];
  const tools = names.filter((b) => (b === name ? on : cur.includes(b)));
  return withList(t, 'approve', [...tools, ...extraPatterns(t, names)]);
}

/** Approval patterns other than a built-in's bare name: globs, `Bash(git push:*)`, MCP tools. */
export function extraPatterns(t: AgentTools | undefined, known: readonly string[] = BUILTIN_TOOLS): string[] {
  return approveOf(t).filter((p) => !known.includes(p));
}

/** Patterns typed one per line: trimmed, blank lines and repeats dropped. */
export function parsePatterns(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const p = line.trim();
    if (p && !out.includes(p)) out.push(p);
  }
  return out;
}

export function setExtraPatterns(t: AgentTools | undefined, patterns: string[], known: readonly string[] = BUILTIN_TOOLS): AgentTools {
  const tools = approveOf(t).filter((p) => known.includes(p));
  const extra = patterns.filter((p) => !tools.includes(p));
  const next = [...tools, ...extra];
  const cur = approveOf(t);
  if (next.length === cur.length && next.every((p, i) => p === cur[i])) return t ?? {};
  return withList(t, 'approve', next);
}

export function setMcp(t: AgentTools | undefined, server: string, on: boolean): AgentTools {
  const cur = mcpOf(t);
  if (cur.includes(server) === on) return t ?? {};
  return withList(t, 'mcp', on ? [...cur, server] : cur.filter((s) => s !== server));
}

/** The chips an agent node shows for its tools. */
export function toolChips(t: AgentTools | undefined, known: readonly string[] = BUILTIN_TOOLS): { text: string; title: string; approve: boolean }[] {
  const out: { text: string; title: string; approve: boolean }[] = [];
  const approve = approveOf(t);
  const builtins = builtinOf(t);
  for (const b of builtins) {
    const gated = approve.includes(b);
    out.push({ text: gated ? `${b} ⚑` : b, title: gated ? `${b}: each call waits for a reviewer` : `${b}: ${BUILTIN_HINTS[b as BuiltinTool] ?? 'tool'}`, approve: gated });
  }
  for (const m of mcpOf(t)) out.push({ text: `mcp:${m}`, title: `MCP server ${m}`, approve: false });
  const extra = extraPatterns(t, [...known, ...builtins]);
  if (extra.length > 0) out.push({ text: `⚑ ${extra.length}`, title: `Calls matching these wait for a reviewer: ${extra.join(', ')}`, approve: true });
  return out;
}
