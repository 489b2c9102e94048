#!/usr/bin/env python3
"""Wrap the source lines wider than 120 columns (UTF-8 code points, as tests/test_app_size.cpp
counts them) without changing what the code means.

    scripts/wrap-long-lines.py FILE...

For each file: a string literal that crosses column 120 is split into adjacent literals (the
compiler joins them again), the continuation under the literal's opening quote, cut after a space
or, in Chinese text, after punctuation or between two ideographs; the other wide lines go to
clang-format, on those lines only (`--lines`: the statements around them keep their layout).
Then the file's tokens are compared with the original's (comments and whitespace left out,
adjacent literals joined): if they differ, the file is put back and named. A line that is still
wide afterwards (a raw string, a long #include) is listed for a hand to wrap.
"""
import re
import subprocess
import sys

MAX = 120
STYLE = ("{BasedOnStyle: Google, IndentWidth: 4, ColumnLimit: 120, AccessModifierOffset: -4, "
         "DerivePointerAlignment: false, PointerAlignment: Left, SortIncludes: Never, "
         "AllowShortFunctionsOnASingleLine: All, IncludeBlocks: Preserve}")
PUNCT = "，；：、。）"


def literal_past_limit(line):
    """(start, end) of the first "..." literal reaching column MAX (end: its closing quote), or None."""
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if line.startswith("//", i):
            return None
        if c == "'" and not (i > 0 and line[i - 1].isalnum()):
            j = i + 1
            while j < n and line[j] != "'":
                j += 2 if line[j] == "\\" else 1
            i = j + 1
            continue
        if c == '"' and not (i > 0 and line[i - 1] == "R"):
            j = i + 1
            while j < n and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            if j >= MAX - 1:
                return (i, j)
            i = j + 1
            continue
        i += 1
    return None


def escaped(line, start, k):
    """Whether cutting before line[k] would split an escape sequence of the literal at start."""
    b, m = 0, k - 1
    while m > start and line[m] == "\\":
        b, m = b + 1, m - 1
    return b % 2 == 1


def split_literals(line):
    out = []
    while len(line) > MAX:
        lit = literal_past_limit(line)
        if lit is None:
            break
        s, e = lit
        cut = None
        for wanted in (lambda ch: ch == " " or ch in PUNCT, lambda ch: ord(ch) > 0x2E80):
            for k in range(min(MAX - 1, e), s + 1, -1):
                if not escaped(line, s, k) and wanted(line[k - 1]):
                    cut = k
                    break
            if cut is not None:
                break
        if cut is None:
            break
        rest = " " * s + '"' + line[cut:]
        if len(rest) >= len(line):
            break
        out.append((line[:cut] + '"').rstrip())
        line = rest
    out.append(line)
    return out


def tokens(src):
    """C++ tokens without comments and whitespace, adjacent string literals joined."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("//", i):
            e = src.find("\n", i)
            i = n if e < 0 else e
            continue
        if src.startswith("/*", i):
            e = src.find("*/", i + 2)
            i = n if e < 0 else e + 2
            continue
        if src[i].isspace():
            i += 1
            continue
        m = re.match(r'(u8|u|U|L)?R"([^(]*)\(', src[i:])
        if m:
            close = ")" + m.group(2) + '"'
            e = src.find(close, i + m.end())
            out.append(("S", src[i + m.end():e].encode("unicode_escape").decode()))
            i = e + len(close)
            continue
        m = re.match(r'(u8|u|U|L)?"', src[i:])
        if m:
            k = i + m.end()
            while src[k] != '"':
                k += 2 if src[k] == "\\" else 1
            out.append(("S", src[i + m.end():k]))
            i = k + 1
            continue
        m = re.match(r"[A-Za-z_]\w*|\d[\w.']*|->|::|<<=|>>=|<=>|&&|\|\||[-+*/%&|^!=<>]=|<<|>>|\+\+|--|.", src[i:])
        out.append(("T", m.group(0)))
        i += m.end()
    joined = []
    for t in out:
        if t[0] == "S" and joined and joined[-1][0] == "S" and not (
                re.search(r"\\x[0-9A-Fa-f]+$", joined[-1][1]) and re.match(r"[0-9A-Fa-f]", t[1])):
            joined[-1] = ("S", joined[-1][1] + t[1])
        else:
            joined.append(t)
    return joined


def wrap(path):
    original = open(path, encoding="utf-8").read()
    lines = []
    for line in original.split("\n"):
        lines.extend(split_literals(line) if len(line) > MAX else [line])
    text = "\n".join(lines)
    open(path, "w", encoding="utf-8").write(text)
    wide = [k + 1 for k, line in enumerate(text.split("\n")) if len(line) > MAX]
    if wide:
        subprocess.run(["clang-format", "-i", "--style=" + STYLE] + [f"--lines={k}:{k}" for k in wide] + [path],
                       check=True)
        text = open(path, encoding="utf-8").read()
    if tokens(text) != tokens(original):
        open(path, "w", encoding="utf-8").write(original)
        print(f"{path}: put back (the tokens changed); wrap it by hand")
        return
    for k, line in enumerate(text.split("\n"), 1):
        if len(line) > MAX:
            print(f"{path}:{k}: still {len(line)} columns; wrap it by hand")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    for p in sys.argv[1:]:
        wrap(p)
