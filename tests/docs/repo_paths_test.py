#!/usr/bin/env python3
"""Every repository path that the documentation names exists.

Reads the READMEs, docs/, the chart's comments (values.yaml, templates) and its NOTES.txt, the
comments of the code (C++, Python, shell, CMake, Promela under services/, python/, tests/, bench/,
scripts/, examples/, proto/, docker/ and .ci/), and
checks each path-like token whose first component is a top-level entry of the repository (or a
folder of services/, as `trainer/worker.cc` is named) and each relative Markdown link against what
git tracks (what a fresh clone holds; the working tree outside git). Globs must match something;
placeholders (<mode>, DIR, ...) and URLs are not paths. Exits 1 naming each
dangling reference with its file and line.
usage: repo_paths_test.py [REPO_ROOT]
"""
import fnmatch
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
URL = re.compile(r"[a-z][a-z0-9+.-]*://\S+")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
PATH = re.compile(r"(?<![\w.$/{-])\.?[\w.*-]+(?:/[\w.*-]*)+")
# Components that stand for something the reader fills in.
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z_]*|N|\.\.\.|\*\*)$")


def documents():
    """(path relative to ROOT, [(line number, text)]) for every text the check reads."""
    names = sorted(glob.glob("**/README.md", root_dir=ROOT, recursive=True))
    names += sorted(glob.glob("docs/**/*.md", root_dir=ROOT, recursive=True))
    names = [n for n in names if not n.startswith(("build/", "node_modules/", "runs/"))]
    for name in names:
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            yield name, list(enumerate(f.read().splitlines(), 1))
    chart = "helm/syncopate"
    with open(os.path.join(ROOT, chart, "templates/NOTES.txt"), encoding="utf-8") as f:
        yield chart + "/templates/NOTES.txt", list(enumerate(f.read().splitlines(), 1))
    comment = re.compile(r"#.*$|\{\{-?\s*/\*.*?\*/\s*-?\}\}")
    for name in [chart + "/values.yaml"] + sorted(
            glob.glob(chart + "/templates/**/*.yaml", root_dir=ROOT, recursive=True)) + sorted(
            glob.glob(chart + "/templates/**/*.tpl", root_dir=ROOT, recursive=True)):
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            lines = f.read().splitlines()
        yield name, [(i, " ".join(comment.findall(line))) for i, line in enumerate(lines, 1)]
    yield from code_comments()


# Where code lives, and how each kind of file writes a comment.
CODE_DIRS = ("services", "python", "tests", "bench", "scripts", "examples", "proto", "docker", ".ci")
SLASH_COMMENT = re.compile(r"//(.*)$")
HASH_COMMENT = re.compile(r"(?:^|\s)#(?![!{])(.*)$")


def code_comments():
    """(path, [(line number, comment text)]) for every tracked source file of CODE_DIRS."""
    try:
        listed = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--", *CODE_DIRS],
                                check=True, capture_output=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        return
    for name in sorted(filter(None, listed)):
        base = os.path.basename(name)
        if name.endswith((".cc", ".h", ".cu", ".proto", ".pml", ".mjs")):
            comment = SLASH_COMMENT
        elif name.endswith((".py", ".sh", ".txt", ".cmake", ".yml", ".yaml")) or base in (
                "run", "Dockerfile") or base.endswith(".Dockerfile"):
            comment = HASH_COMMENT
        else:
            continue
        with open(os.path.join(ROOT, name), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        yield name, [(i, m.group(1)) for i, line in enumerate(lines, 1)
                     if (m := comment.search(line))]


def repository_entries():
    """What a fresh clone holds: the files git tracks and their folders (None outside git)."""
    try:
        listed = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True,
                                capture_output=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        return None
    entries = set()
    for name in filter(None, listed):
        parts = name.split("/")
        entries.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return entries


ENTRIES = repository_entries()


def exists(path):
    """Whether `path` (absolute, under ROOT) is in the repository; a glob must match something."""
    relative = os.path.relpath(os.path.normpath(path), ROOT)
    if ENTRIES is None:
        return bool(glob.glob(path)) if "*" in path else os.path.exists(path)
    if "*" in relative:
        return any(fnmatch.fnmatch(entry, relative.rstrip("/")) for entry in ENTRIES)
    return relative == "." or relative.rstrip("/") in ENTRIES


def dangling(name, lines):
    top = set(os.listdir(ROOT)) - {"build", "build-sanitized", "runs", ".git"}
    services = set(os.listdir(os.path.join(ROOT, "services")))
    base = os.path.dirname(os.path.join(ROOT, name))
    for number, text in lines:
        text = URL.sub(" ", text)
        for target in LINK.findall(text):
            if not exists(os.path.normpath(os.path.join(base, target))):
                yield number, target
        for token in PATH.findall(LINK.sub(" ", text)):
            token = token.rstrip(".,:;").removeprefix("./")
            parts = [p for p in token.split("/") if p]
            if not parts or any(PLACEHOLDER.match(p) for p in parts):
                continue
            if parts[0] in top:
                path = os.path.join(ROOT, token)
            elif parts[0] in services and len(parts) > 1:
                path = os.path.join(ROOT, "services", token)
            else:
                continue
            if not exists(path):
                yield number, token


def main():
    failures, checked = [], 0
    for name, lines in documents():
        checked += 1
        failures += [f"{name}:{n}: {token} does not exist" for n, token in dangling(name, lines)]
    if checked < 5:
        failures.append(f"only {checked} documents found under {ROOT}")
    print("\n".join(failures) or f"every path named in {checked} documents exists")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
