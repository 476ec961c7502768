import { describe, expect, it } from 'vitest';
import { changeLines, diffLines, merge2, merge3, mergedText, openConflicts, splitLines } from './merge';

const FILE = `name: t
description: d
nodes:
  - id: a
    bash: echo a
  - id: b
    bash: echo b
`;

describe('diffLines', () => {
  it('a one-line change is one one-line hunk', () => {
    const a = splitLines(FILE);
    const b = splitLines(FILE.replace('echo b', 'echo B'));
    expect(diffLines(a, b)).toEqual([{ bStart: 6, bEnd: 7, sStart: 6, sEnd: 7 }]);
  });
  it('insertions and deletions', () => {
    expect(diffLines(['x', 'y'], ['x', 'n', 'y'])).toEqual([{ bStart: 1, bEnd: 1, sStart: 1, sEnd: 2 }]);
    expect(diffLines(['x', 'n', 'y'], ['x', 'y'])).toEqual([{ bStart: 1, bEnd: 2, sStart: 1, sEnd: 1 }]);
    expect(diffLines([], [])).toEqual([]);
    expect(diffLines(['a', 'b', 'c', 'd'], ['a', 'B', 'c', 'D'])).toEqual([
      { bStart: 1, bEnd: 2, sStart: 1, sEnd: 2 },
      { bStart: 3, bEnd: 4, sStart: 3, sEnd: 4 },
    ]);
  });
});

describe('merge3', () => {
  it('takes changes only one side made: yours and the disk in different places merge without asking', () => {
    const yours = FILE.replace('echo a', 'echo mine');
    const disk = FILE.replace('echo b', 'echo theirs');
    const blocks = merge3(FILE, yours, disk);
    const changes = blocks.filter((b) => b.kind === 'change');
    expect(changes.map((c) => c.kind === 'change' && [c.by, c.conflict, c.proposed])).toEqual([
      ['yours', false, 'yours'],
      ['disk', false, 'disk'],
    ]);
    expect(openConflicts(blocks, {})).toBe(0);
    expect(mergedText(blocks)).toBe(FILE.replace('echo a', 'echo mine').replace('echo b', 'echo theirs'));
  });

  it('the same line changed differently is a conflict the person picks; picking gives that side', () => {
    const yours = FILE.replace('echo b', 'echo mine');
    const disk = FILE.replace('echo b', 'echo theirs');
    const blocks = merge3(FILE, yours, disk);
    const c = blocks.find((b) => b.kind === 'change');
    expect(c).toMatchObject({ kind: 'change', by: 'both', conflict: true, proposed: null, base: ['    bash: echo b'] });
    expect(mergedText(blocks)).toBeNull();
    expect(openConflicts(blocks, {})).toBe(1);
    expect(mergedText(blocks, { 0: 'disk' })).toBe(disk);
    expect(mergedText(blocks, { 0: 'yours' })).toBe(yours);
    expect(mergedText(blocks, { 0: 'both' })).toBe(FILE.replace('    bash: echo b', '    bash: echo mine\n    bash: echo theirs'));
  });

  it('the same change on both sides is no conflict', () => {
    const both = FILE.replace('echo a', 'echo same');
    const blocks = merge3(FILE, both, both);
    expect(openConflicts(blocks, {})).toBe(0);
    expect(mergedText(blocks)).toBe(both);
  });

  it('steps added at the end on both sides conflict (their order is unknown); both keeps both', () => {
    const yours = FILE + '  - id: mine\n    bash: echo mine\n';
    const disk = FILE + '  - id: theirs\n    bash: echo theirs\n';
    const blocks = merge3(FILE, yours, disk);
    expect(openConflicts(blocks, {})).toBe(1);
    const merged = mergedText(blocks, { 0: 'both' })!;
    expect(merged).toContain('id: mine');
    expect(merged).toContain('id: theirs');
    expect(merged.indexOf('id: mine')).toBeLessThan(merged.indexOf('id: theirs'));
  });

  it('no change at all is one same block', () => {
    expect(merge3(FILE, FILE, FILE)).toEqual([{ kind: 'same', lines: splitLines(FILE) }]);
  });
});

describe('changeLines', () => {
  it('marks removed and added lines against base, with common lines as context', () => {
    expect(changeLines(['a', 'b', 'c'], ['a', 'B', 'c', 'd'])).toEqual([
      { kind: 'ctx', text: 'a' },
      { kind: 'del', text: 'b' },
      { kind: 'add', text: 'B' },
      { kind: 'ctx', text: 'c' },
      { kind: 'add', text: 'd' },
    ]);
  });
});

describe('merge2', () => {
  it('without a base every difference is a conflict', () => {
    const blocks = merge2('a\nmine\nc', 'a\ntheirs\nc');
    expect(openConflicts(blocks, {})).toBe(1);
    expect(mergedText(blocks, { 0: 'yours' })).toBe('a\nmine\nc');
    expect(mergedText(blocks, { 0: 'disk' })).toBe('a\ntheirs\nc');
  });
});
