// Line diffs and a three-way merge (diff3) of a YAML file: the text an
// editor started from (base), the editor's text (yours) and the file on
// disk now (disk). Changes only one side made are taken as they are;
// where both sides changed the same lines differently, the person picks
// per hunk.

/** Base lines [bStart, bEnd) replaced by the other text's lines [sStart, sEnd). */
export type Hunk = { bStart: number; bEnd: number; sStart: number; sEnd: number };

/** Above this many line pairs (after trimming what is common) the middle is one hunk. */
const MAX_CELLS = 4_000_000;

export function splitLines(text: string): string[] {
  return text.split('\n');
}

/**
 * The hunks that turn `a` into `b`: a longest common subsequence of lines
 * (common prefix and suffix trimmed first), so a one-line change is one
 * one-line hunk.
 */
export function diffLines(a: readonly string[], b: readonly string[]): Hunk[] {
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const n = a.length - pre - suf;
  const m = b.length - pre - suf;
  if (n === 0 && m === 0) return [];
  if (n === 0 || m === 0 || n * m > MAX_CELLS) return [{ bStart: pre, bEnd: pre + n, sStart: pre, sEnd: pre + m }];
  // lcs[i][j] = LCS length of a[pre+i..] and b[pre+j..], row-major.
  const w = m + 1;
  const lcs = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i * w + j] = a[pre + i] === b[pre + j] ? lcs[(i + 1) * w + j + 1]! + 1 : Math.max(lcs[(i + 1) * w + j]!, lcs[i * w + j + 1]!);
    }
  }
  const hunks: Hunk[] = [];
  let i = 0;
  let j = 0;
  let open: Hunk | null = null;
  const flush = () => {
    if (open) hunks.push(open);
    open = null;
  };
  while (i < n || j < m) {
    if (i < n && j < m && a[pre + i] === b[pre + j]) {
      flush();
      i++;
      j++;
    } else if (j < m && (i === n || lcs[i * w + j + 1]! >= lcs[(i + 1) * w + j]!)) {
      open ??= { bStart: pre + i, bEnd: pre + i, sStart: pre + j, sEnd: pre + j };
      open.sEnd = pre + j + 1;
      j++;
    } else {
      open ??= { bStart: pre + i, bEnd: pre + i, sStart: pre + j, sEnd: pre + j };
      open.bEnd = pre + i + 1;
      i++;
    }
  }
  flush();
  return hunks;
}

export type MergeChoice = 'yours' | 'disk' | 'both';

/** A stretch of the merge: lines all three agree on, or a change (one side's, or both sides'). */
export type MergeBlock =
  | { kind: 'same'; lines: string[] }
  | {
      kind: 'change';
      /** Index among the change blocks (0-based), for ids and choices. */
      index: number;
      base: string[];
      yours: string[];
      disk: string[];
      /** Who changed these lines: only you, only the disk, or both (a conflict unless both made the same change). */
      by: 'yours' | 'disk' | 'both';
      /** Both changed them, differently: the person picks. */
      conflict: boolean;
      /** What is taken unless the person picks otherwise (null: a conflict, not picked yet). */
      proposed: MergeChoice | null;
    };

/** The three-way merge of base, yours and disk, as blocks. */
export function merge3(base: string, yours: string, disk: string): MergeBlock[] {
  const b = splitLines(base);
  const y = splitLines(yours);
  const d = splitLines(disk);
  type Tagged = Hunk & { side: 'yours' | 'disk' };
  const all: Tagged[] = [
    ...diffLines(b, y).map((h) => ({ ...h, side: 'yours' as const })),
    ...diffLines(b, d).map((h) => ({ ...h, side: 'disk' as const })),
  ].sort((p, q) => p.bStart - q.bStart || p.bEnd - q.bEnd);
  const blocks: MergeBlock[] = [];
  let at = 0; // next base line not yet in a block
  let index = 0;
  const sideLines = (lines: string[], hs: Tagged[], gStart: number, gEnd: number): string[] => {
    if (hs.length === 0) return b.slice(gStart, gEnd);
    const first = hs[0]!;
    const last = hs[hs.length - 1]!;
    return lines.slice(first.sStart - (first.bStart - gStart), last.sEnd + (gEnd - last.bEnd));
  };
  for (let k = 0; k < all.length; ) {
    // A group: hunks that overlap or touch in base.
    const gStart = all[k]!.bStart;
    let gEnd = all[k]!.bEnd;
    const group: Tagged[] = [all[k]!];
    k++;
    // Overlapping hunks, and an insertion where the group starts or ends
    // (whose order against the other side's change is not known), go together.
    for (; k < all.length; k++) {
      const h = all[k]!;
      const touches = h.bStart < gEnd || (h.bStart === gEnd && (h.bStart === h.bEnd || gStart === gEnd));
      if (!touches) break;
      gEnd = Math.max(gEnd, h.bEnd);
      group.push(h);
    }
    if (gStart > at) blocks.push({ kind: 'same', lines: b.slice(at, gStart) });
    const ys = group.filter((h) => h.side === 'yours');
    const ds = group.filter((h) => h.side === 'disk');
    const yl = sideLines(y, ys, gStart, gEnd);
    const dl = sideLines(d, ds, gStart, gEnd);
    const baseLines = b.slice(gStart, gEnd);
    const by = ys.length && ds.length ? 'both' : ys.length ? 'yours' : 'disk';
    const same = by === 'both' && yl.length === dl.length && yl.every((l, i) => l === dl[i]);
    blocks.push({
      kind: 'change',
      index: index++,
      base: baseLines,
      yours: yl,
      disk: dl,
      by,
      conflict: by === 'both' && !same,
      proposed: by === 'yours' ? 'yours' : by === 'disk' ? 'disk' : same ? 'yours' : null,
    });
    at = gEnd;
  }
  if (at < b.length) blocks.push({ kind: 'same', lines: b.slice(at) });
  return blocks;
}

/** The merged text for the choices (by change index; unpicked ones take their proposal). Null while a conflict is unpicked. */
export function mergedText(blocks: readonly MergeBlock[], choices: Readonly<Record<number, MergeChoice>> = {}): string | null {
  const out: string[] = [];
  for (const bl of blocks) {
    if (bl.kind === 'same') {
      out.push(...bl.lines);
      continue;
    }
    const c = choices[bl.index] ?? bl.proposed;
    if (c === null) return null;
    if (c === 'yours') out.push(...bl.yours);
    else if (c === 'disk') out.push(...bl.disk);
    // Both: yours, then the disk's lines (less the base lines yours kept too).
    else out.push(...bl.yours, ...bl.disk.filter((l) => !(bl.base.includes(l) && bl.yours.includes(l))));
  }
  return out.join('\n');
}

/** How many conflicts are still unpicked. */
export function openConflicts(blocks: readonly MergeBlock[], choices: Readonly<Record<number, MergeChoice>>): number {
  return blocks.filter((b) => b.kind === 'change' && b.conflict && choices[b.index] === undefined).length;
}

/** One line of a side's change against base, for highlighting. */
export type DiffLine = { kind: 'del' | 'add' | 'ctx'; text: string };

/** The lines of `side` against `base` inside one change block: removed base lines, then added ones (common lines as context). */
export function changeLines(base: readonly string[], side: readonly string[]): DiffLine[] {
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  for (const h of diffLines(base, side)) {
    while (i < h.bStart) {
      out.push({ kind: 'ctx', text: base[i]! });
      i++;
      j++;
    }
    for (let k = h.bStart; k < h.bEnd; k++) out.push({ kind: 'del', text: base[k]! });
    for (let k = h.sStart; k < h.sEnd; k++) out.push({ kind: 'add', text: side[k]! });
    i = h.bEnd;
    j = h.sEnd;
  }
  while (i < base.length) out.push({ kind: 'ctx', text: base[i++]! });
  void j;
  return out;
}

/**
 * Without the base (the server no longer has it): every stretch where
 * yours and the disk differ is a conflict to pick.
 */
export function merge2(yours: string, disk: string): MergeBlock[] {
  const y = splitLines(yours);
  const d = splitLines(disk);
  const blocks: MergeBlock[] = [];
  let at = 0;
  let index = 0;
  for (const h of diffLines(d, y)) {
    if (h.bStart > at) blocks.push({ kind: 'same', lines: d.slice(at, h.bStart) });
    const dl = d.slice(h.bStart, h.bEnd);
    blocks.push({ kind: 'change', index: index++, base: dl, yours: y.slice(h.sStart, h.sEnd), disk: dl, by: 'both', conflict: true, proposed: null });
    at = h.bEnd;
  }
  if (at < d.length) blocks.push({ kind: 'same', lines: d.slice(at) });
  return blocks;
}
