#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Add a compressed-DWARF bomb to an ELF file: a section compressed the gABI way
(SHF_COMPRESSED: an Elf64_Chdr, ELFCOMPRESS_ZLIB, then a zlib stream) that really
inflates to SIZE zero bytes, about a thousand times its size on disk.  Or make a
compressed section claim SIZE bytes without changing its stream (--claim).

usage: elf-bomb.py IN OUT NAME SIZE
       elf-bomb.py --claim FILE NAME SIZE

IN must be a 64-bit little-endian ELF file.  OUT is IN with the section NAME added
(its contents and a new section name table appended, then a new section header
table), every other byte where it was.  objcopy --add-section followed by
--compress-debug-sections does the same with SIZE bytes in memory and on disk; this
streams the zeros through zlib instead (about 2 s and a few MB for 512 MiB).
--claim writes SIZE as the ch_size of FILE's SHF_COMPRESSED section NAME, in place.
"""
import struct
import sys
import zlib


def read_elf(path):
    """The file's bytes, its section headers and its section name table."""
    data = bytearray(open(path, "rb").read())
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        sys.exit("elf-bomb: '%s' is not a 64-bit little-endian ELF file" % path)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    if shentsize != 64 or not 0 < shstrndx < shnum < 0xff00:
        sys.exit("elf-bomb: unexpected section headers in '%s'" % path)
    shdrs = [bytearray(data[shoff + i * 64:shoff + (i + 1) * 64]) for i in range(shnum)]
    stroff, strsize = struct.unpack_from("<QQ", shdrs[shstrndx], 0x18)
    return data, shdrs, shstrndx, bytes(data[stroff:stroff + strsize])


def claim(path, name, size):
    data, shdrs, _, names = read_elf(path)
    for sh in shdrs:
        sh_name, = struct.unpack_from("<I", sh, 0)
        flags, = struct.unpack_from("<Q", sh, 8)
        offset, = struct.unpack_from("<Q", sh, 0x18)
        if names[sh_name:].split(b"\0", 1)[0] == name.encode() and flags & 0x800:
            struct.pack_into("<Q", data, offset + 8, size)
            with open(path, "wb") as f:
                f.write(data)
            return
    sys.exit("elf-bomb: no compressed section '%s' in '%s'" % (name, path))


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--claim":
        claim(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    if len(sys.argv) != 5:
        sys.exit("usage: elf-bomb.py IN OUT NAME SIZE | --claim FILE NAME SIZE")
    src, dst, name, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    data, shdrs, shstrndx, names = read_elf(src)
    strsize = len(names)
    names += name.encode() + b"\0"

    # Elf64_Chdr {ch_type, ch_reserved, ch_size, ch_addralign}, then the stream.
    parts = [struct.pack("<IIQQ", 1, 0, size, 1)]
    z = zlib.compressobj(6)
    zeros = bytes(1 << 20)
    left = size
    while left:
        n = min(left, len(zeros))
        parts.append(z.compress(zeros[:n]))
        left -= n
    parts.append(z.flush())
    blob = b"".join(parts)

    data += bytes(-len(data) % 8)
    sec_off = len(data)
    data += blob
    str_off = len(data)
    data += names
    data += bytes(-len(data) % 8)
    struct.pack_into("<QQ", shdrs[shstrndx], 0x18, str_off, len(names))
    new_shoff = len(data)
    for s in shdrs:
        data += s
    # Elf64_Shdr: name, SHT_PROGBITS, SHF_COMPRESSED, addr, offset, size, link, info, align, entsize.
    data += struct.pack("<IIQQQQIIQQ", strsize, 1, 0x800, 0, sec_off, len(blob), 0, 0, 8, 0)
    struct.pack_into("<Q", data, 0x28, new_shoff)
    struct.pack_into("<H", data, 0x3c, len(shdrs) + 1)
    with open(dst, "wb") as f:
        f.write(data)


main()
