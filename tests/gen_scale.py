#!/usr/bin/env python3
"""gen_scale.py KIND N: a generated tgc.graph on stdout, for tests/scale.sh (issue: huge graphs).

  chain N    one N-deep chain of alternating ADD/MUL with a 16-float buffer. tinygrad's
             unified_rewrite refuses any graph deeper than ~100,000 (len(stack) >= 200000:
             "infinite loop in graph_rewrite (stack too big)"), so a 1,000,000 chain must end
             in that error, cleanly, never in a stack overflow.
  chains N   N // 90000 independent 90,000-deep chains (each its own buffer and output): deep,
             but under the limit, so it schedules (one kernel per chain).
  fanout N   one N-element buffer read by N one-element SHRINKs, summed 1024 at a time by ADD
             trees into CONTIGUOUS partial sums, which an ADD tree sums again: N // 1024 + 1
             kernels, and a node with N children.
"""
import sys


def graph(kind, n):
    rows = ['{"id":0,"op":"UNIQUE","dtype":"void","arg":0}', '{"id":1,"op":"DEVICE","dtype":"void","arg":"CPU"}']

    def add(op, dt, src, arg=None):
        i = len(rows)
        r = '{"id":%d,"op":"%s","dtype":"%s"' % (i, op, dt)
        if src:
            r += ',"src":[%s]' % ",".join(map(str, src))
        if arg is not None:
            r += ',"arg":%s' % arg
        rows.append(r + "}")
        return i

    def tree(ids):
        while len(ids) > 1:
            nxt = [add("ADD", "float", [ids[j], ids[j + 1]]) for j in range(0, len(ids) - 1, 2)]
            if len(ids) % 2:
                nxt.append(ids[-1])
            ids = nxt
        return ids[0]

    outs = []
    if kind == "chain":
        b = add("BUFFER", "float", [0, 1], 16)
        prev = b
        for k in range(n):
            prev = add("MUL" if k % 2 else "ADD", "float", [prev, b])
        outs = [prev]
    elif kind == "chains":
        depth = 90000
        for c in range(n // depth):
            u = add("UNIQUE", "void", [], c + 1)
            b = add("BUFFER", "float", [u, 1], 16)
            prev = b
            for k in range(depth):
                prev = add("MUL" if k % 2 else "ADD", "float", [prev, b])
            outs.append(prev)
    elif kind == "fanout":
        b = add("BUFFER", "float", [0, 1], n)
        leaves = [add("SHRINK", "float", [b], "[[%d,%d]]" % (k, k + 1)) for k in range(n)]
        parts = [add("CONTIGUOUS", "float", [tree(leaves[g:g + 1024])]) for g in range(0, n, 1024)]
        outs = [tree(parts)]
    else:
        sys.exit("gen_scale.py: KIND is chain, chains or fanout")
    s = add("SINK", "void", outs)
    return '{"format":"tgc.graph","version":1,"producer":"tests/gen_scale.py","uops":[' + ",".join(rows) + '],"sink":%d}\n' % s


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.stdout.write(graph(sys.argv[1], int(sys.argv[2])))
