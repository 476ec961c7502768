/** Next id of the form `${prefix}${n}` not in `taken`. */
export function nextId(prefix: string, taken: Iterable<string>): string {
  let max = 0;
  const re = new RegExp(`^${prefix}(\\d+)$`);
  for (const id of taken) {
    const m = re.exec(id);
    if (m) max = Math.max(max, Number(m[1]));
  }
  return `${prefix}${max + 1}`;
}

/** A generator handing out several fresh ids without rescanning. */
export function idAllocator(prefix: string, taken: Iterable<string>): () => string {
  const first = nextId(prefix, taken);
  let n = Number(first.slice(prefix.length));
  return () => `${prefix}${n++}`;
}
