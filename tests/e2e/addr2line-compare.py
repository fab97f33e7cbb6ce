#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Compare the inline chains and source lines that `stackpulse symbolize` stored in a
spool with what an addr2line tool prints for the same addresses.

usage: addr2line-compare.py DUMP BINARY MODULE-NAME TOOL...

DUMP is `stackpulse dump` of a symbolized spool; every frame of the module whose file
name is MODULE-NAME is given to TOOL (e.g. eu-addr2line or addr2line) with
-a -i -f -C -e BINARY.  Frames are stored at the looked-up address (return addresses
minus one), so the same address goes to the tool.  Each frame counts with the number
of samples whose stack holds it.  Prints "AGREE TOTAL FRAMES" on stdout and the
heaviest differences on stderr.
"""
import os
import re
import subprocess
import sys

KV = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def fields(text):
    return {k: (v[1:-1] if v.startswith('"') else v) for k, v in KV.findall(text)}


def read_dump(path):
    mods, frames, stacks, samples, chains = {}, {}, {}, {}, {}
    for line in open(path, encoding='utf-8', errors='replace'):
        kind = line.split(' ', 1)[0]
        if kind == 'module':
            f = fields(line)
            mods[f['id']] = f['path']
        elif kind == 'frame':
            f = fields(line)
            frames[f['id']] = f
        elif kind == 'stack':
            f = fields(line)
            stacks[f['id']] = (f['parent'], f['frame'])
        elif kind == 'sample':
            sid = fields(line)['stack']
            samples[sid] = samples.get(sid, 0) + 1
        elif kind == 'sym-frame':
            head = line.split(' ', 3)
            fid = head[1].split('=', 1)[1]
            chain = []
            for k, v in KV.findall(head[3]):
                v = v[1:-1] if v.startswith('"') else v.rstrip(']')
                if k == 'kind':
                    chain.append({})
                chain[-1][k] = v
            chains[fid] = [(c['name'], base(c.get('file', '-')), int(c.get('line', 0)))
                           for c in chain]
    return mods, frames, stacks, samples, chains


def base(path):
    return os.path.basename(path) if path not in ('-', '??', '') else '??'


def run_tool(tool, binary, addrs):
    out = subprocess.run(tool + ['-a', '-i', '-f', '-C', '-e', binary] + addrs,
                         capture_output=True, text=True, check=False).stdout.splitlines()
    result, cur, i = {}, None, 0
    while i < len(out):
        if re.match(r'^0x[0-9a-f]+$', out[i]):
            cur = int(out[i], 16)
            result[cur] = []
            i += 1
            continue
        name = out[i].split(' inlined at ', 1)[0]
        loc = out[i + 1] if i + 1 < len(out) else '??:0'
        i += 2
        loc = re.sub(r' \(discriminator \d+\)$', '', loc)
        parts = loc.split(':')
        # FILE:LINE (binutils) or FILE:LINE:COLUMN (elfutils)
        if len(parts) >= 3 and parts[-1].isdigit() and parts[-2].isdigit():
            path, line = ':'.join(parts[:-2]), parts[-2]
        else:
            path, line = ':'.join(parts[:-1]), parts[-1]
        result[cur].append((name, base(path), int(line) if line.isdigit() else 0))
    return result


def main():
    dump, binary, modname, tool = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    mods, frames, stacks, samples, chains = read_dump(dump)
    weight = {}
    for sid, n in samples.items():
        seen = 0
        while sid in stacks and seen < 100000:
            parent, fid = stacks[sid]
            weight[fid] = weight.get(fid, 0) + n
            sid, seen = parent, seen + 1
    ours = [fid for fid, f in frames.items()
            if base(mods.get(f['module'], '')) == modname and fid in chains]
    theirs = run_tool(tool, binary, [frames[fid]['rel'] for fid in ours])
    agree = total = 0
    bad = []
    for fid in ours:
        w = weight.get(fid, 0)
        total += w
        a, b = chains[fid], theirs.get(int(frames[fid]['rel'], 16), [])
        if a == b:
            agree += w
        else:
            bad.append((w, frames[fid]['rel'], a, b))
    print(agree, total, len(ours))
    for w, rel, a, b in sorted(bad, reverse=True)[:5]:
        print('# %s differs at %s (%d samples): stackpulse %s, %s %s'
              % (tool[0], rel, w, a, tool[0], b), file=sys.stderr)


if __name__ == '__main__':
    main()
