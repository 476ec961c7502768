#!/usr/bin/env python3
"""What each commit in a SQLite WAL wrote, by b-tree.

usage: scripts/walframes.py DB WAL

DB and WAL are copies of switchyard.db and switchyard.db-wal taken after
the server was killed (SIGKILL, so nothing checkpointed the WAL away),
e.g. after `switchyard load runs --server URL`. Reads the frames of the
WAL's current generation (those with the header's salt), splits them into
commits, and counts the pages each b-tree had written (dbstat, on a
scratch copy of the two files). Needs Python's sqlite3 with dbstat (as
Debian's has).
"""
import collections
import os
import shutil
import sqlite3
import struct
import sys
import tempfile


def main(db, wal_path):
    wal = open(wal_path, 'rb').read()
    _, _, psz, _, salt1, salt2, _, _ = struct.unpack('>IIIIIIII', wal[:32])
    size = 24 + psz
    commits, cur, off = [], [], 32
    while off + size <= len(wal):
        pg, ntrunc, s1, s2, _, _ = struct.unpack('>IIIIII', wal[off:off + 24])
        if (s1, s2) != (salt1, salt2):
            break
        cur.append(pg)
        if ntrunc:  # a commit's last frame carries the database size
            commits.append(cur)
            cur = []
        off += size
    if not commits:
        sys.exit('no commit in the WAL')
    tmp = tempfile.mkdtemp()
    try:
        shutil.copy(db, os.path.join(tmp, 'x.db'))
        shutil.copy(wal_path, os.path.join(tmp, 'x.db-wal'))
        c = sqlite3.connect(os.path.join(tmp, 'x.db'))
        owner = {p: (n, t) for n, p, t in c.execute('SELECT name, pageno, pagetype FROM dbstat')}
        c.close()
    finally:
        shutil.rmtree(tmp)
    count = collections.Counter()
    for cm in commits:
        for pg in cm:
            count[('page 1', '') if pg == 1 else owner.get(pg, ('pointer map or free', ''))] += 1
    total = sum(count.values())
    print(f'{len(commits)} commits, {total / len(commits):.1f} frames a commit')
    for (name, kind), n in count.most_common():
        print(f'{name:36} {kind:9} {n:6} {100 * n / total:5.1f} % {n / len(commits):6.2f} a commit')


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
