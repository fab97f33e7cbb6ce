# SPDX-License-Identifier: MIT
"""Write spools shaped to cost readers the most per byte (stackpulse-spool(5)).

hostile-spool.py KIND OUT [N]
  deep   one chain of N stack nodes (default 20000), one sample on every node:
         expanding every sampled stack costs N^2 / 2 frames
  wide   a chain N deep (default 2048), then as many sampled leaves under its
         end as fit in 1 MB: every distinct stack is N frames long
  spellings FILE: N modules (default 1000), each naming FILE by another path
         ("/dir//FILE", "/dir/./FILE", ...) with its true inode, device, size
         and mtime and no build-id, a sampled frame in each (at $SVMA, hex)
  widenames  as wide, every node with a frame of its own (no names merge)
  offwide  as wide, a recording of off-CPU time: every other leaf an off-CPU
         interval of 1 ms (OFFCPU, every third of them preempted) instead of
         a sample
  deepnames  chains N deep (default 2048), every node a frame of its own and
         sampled, as many as fit in 1 MB
  inline     a chain 2048 deep of two frames, each with a stored inline chain
         of N entries (default 20000, a SYM_FRAME record), 10 samples on
         its end: every frame of the stack expands into N
  pids       one chain 2048 deep, then N processes (default 8000) of one
         thread each, one sample each on the chain's end: every view that
         counts per process or thread, or groups by them, meets N
  pmlines    N processes (default 25000) of one thread each, each with a
         stored perf map line (a SYM_PERF_MAP record) and one sample on a
         frame of its own that the line names: each process's map is made from
         the stored lines, which a reader scanning all of them per process
         pays N^2 for
Every record is well formed; only the shape is hostile.  HOSTILE_BYTES in the
environment changes the 1 MB that wide, offwide, widenames and deepnames fill.
"""
import os
import struct
import sys

LIMIT = int(os.environ.get("HOSTILE_BYTES", 1 << 20))


def uvarint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def svarint(v):
    return uvarint((v << 1) ^ (v >> 63) if v < 0 else v << 1)


def string(s):
    b = s.encode()
    return uvarint(len(b)) + b


def record(kind, payload):
    return bytes([kind]) + uvarint(len(payload)) + payload


def spool(kind, n):
    out = bytearray(b"SPSPOOL\0" + struct.pack("<H", 1))
    out += record(1, uvarint(1_700_000_000_000_000) + uvarint(1001) + uvarint(1_000_000_000)
                  + uvarint(999) + uvarint(32768) + uvarint(1) + string("hostile")
                  + string("host") + string("6.1.0")
                  # offwide: the period and flag 2, record --off-cpu
                  + (uvarint(1_001_001) + uvarint(2) if kind == "offwide" else b""))
    # Two frames without a module (address-only): mode 0, abs_ip, rel_delta 0.
    out += record(3, uvarint(0) + uvarint(0) + uvarint(0x401000) + svarint(0))
    out += record(3, uvarint(0) + uvarint(0) + uvarint(0x402000) + svarint(0))
    out += record(5, svarint(100) + svarint(100))
    if kind.startswith("spellings:"):
        path = os.path.abspath(kind.split(":", 1)[1])
        st = os.stat(path)
        head, name = os.path.split(path)
        # The frames' address in FILE: SVMA (hex) from the environment, else 0x10.
        svma = int(os.environ.get("SVMA", "10"), 16)
        for i in range(n):
            spelled = head + "/" + "./" * (i // 2) + ("/" if i % 2 else "") + name
            start = 0x10000000 + i * 0x100000
            out += record(2, svarint(100) + uvarint(start) + uvarint(0x100000) + uvarint(0)
                          + uvarint(st.st_ino) + uvarint(os.major(st.st_dev))
                          + uvarint(os.minor(st.st_dev)) + uvarint(start) + uvarint(st.st_size)
                          + svarint(st.st_mtime_ns) + uvarint(8) + uvarint(0) + string(spelled))
            out += record(3, uvarint(i + 1) + uvarint(0) + uvarint(start + svma) + svarint(0))
            out += record(4, uvarint(i + 1) + uvarint(i + 2))  # parent: the root
            out += record(7, uvarint(0) + uvarint(i + 1) + svarint(1_000_000))
        return bytes(out)
    if kind in ("widenames", "deepnames"):
        # Frame i + 2 (ids 0 and 1 are above) at its own address; node i uses it.
        frames = 0

        def node(back):
            nonlocal frames
            frames += 1
            return (record(3, uvarint(0) + uvarint(0) + uvarint(0x500000 + frames * 16) + svarint(0))
                    + record(4, uvarint(back) + uvarint(frames + 1)))
        nodes = 0
        while len(out) < LIMIT - 64:
            if kind == "widenames":
                back = 1 if nodes < n else nodes + 1 - n
            else:
                back = nodes + 1 if nodes % n == 0 else 1  # each chain starts at the root
            out += node(back)
            nodes += 1
            if kind == "deepnames" or nodes > n:
                out += record(7, uvarint(0) + uvarint(nodes) + svarint(1_000_000))
        return bytes(out)
    if kind == "inline":
        # Strings: a name per entry would be as costly to write as to read; two do.
        out += record(11, uvarint(3) + string("inlined_fn") + string("outer_fn") + string("hostile.so"))
        for i in range(1, 2049):
            out += record(4, uvarint(1) + uvarint(i % 2))
        for frame in (0, 1):
            entry = uvarint(0) + uvarint(0) + uvarint(8) + uvarint(0) + uvarint(2) + uvarint(0) \
                + uvarint(0) + uvarint(0)
            last = uvarint(0) + uvarint(0) + uvarint(0) + uvarint(1) + uvarint(2) + uvarint(0) \
                + uvarint(0) + uvarint(16)
            out += record(12, uvarint(frame) + uvarint(n) + entry * (n - 1) + last)
        for _ in range(10):
            out += record(7, uvarint(0) + uvarint(2048) + svarint(1_000_000))
        return bytes(out)
    if kind == "pids":
        for i in range(1, 2049):
            out += record(4, uvarint(1) + uvarint(i % 2))
        for k in range(n):
            out += record(5, svarint(1000 + k) + svarint(1000 + k))
            out += record(7, uvarint(k + 1) + uvarint(2048) + svarint(1_000_000))
        return bytes(out)
    if kind == "pmlines":
        out += record(11, uvarint(1) + string("jit_fn"))
        for k in range(n):
            # Frame k + 2 (outside every module) is process k's alone, as its stack node k + 1.
            out += record(3, uvarint(0) + uvarint(0) + uvarint(0x600000 + k * 16) + svarint(0))
            out += record(4, uvarint(k + 1) + uvarint(k + 2))
            out += record(5, svarint(1000 + k) + svarint(1000 + k))
            out += record(14, svarint(1000 + k) + uvarint(0x600000) + uvarint(n * 16) + uvarint(0))
            out += record(7, uvarint(k + 1) + uvarint(k + 1) + svarint(1_000_000))
        return bytes(out)
    if kind == "deep":
        for i in range(1, n + 1):
            out += record(4, uvarint(1) + uvarint(i % 2))
            out += record(7, uvarint(0) + uvarint(i) + svarint(1_000_000))
    else:
        for i in range(1, n + 1):
            out += record(4, uvarint(1) + uvarint(i % 2))
        node = n
        while len(out) < LIMIT - 32:
            node += 1
            # Each leaf hangs under the chain's end (node n), back = node - n.
            out += record(4, uvarint(node - n) + uvarint(node % 2))
            if kind == "offwide" and node % 2:
                # thread 0, stack, start delta, 1 ms off CPU, flags (1: preempted)
                out += record(16, uvarint(0) + uvarint(node) + svarint(2_000_000)
                              + uvarint(1_000_000) + uvarint(1 if node % 3 == 0 else 0))
            else:
                out += record(7, uvarint(0) + uvarint(node) + svarint(1_000_000))
    return bytes(out)


def main():
    kind, path = sys.argv[1], sys.argv[2]
    default = 20000 if kind in ("deep", "inline") else 8000 if kind == "pids" else \
        25000 if kind == "pmlines" else \
        2048 if kind in ("wide", "offwide", "widenames", "deepnames") else 1000
    n = int(sys.argv[3]) if len(sys.argv) > 3 else default
    with open(path, "wb") as f:
        f.write(spool(kind, n))


main()
