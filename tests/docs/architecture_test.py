#!/usr/bin/python3
"""docs/architecture.dot draws every library and binary with one edge per `syncopate::` name in its
DEPS, exactly as the CMake files link them, and docs/architecture.svg is that file rendered by
scripts/render-architecture.sh (Graphviz).

Usage: architecture_test.py REPO_ROOT
"""
import glob
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv[1]


def cmake_edges():
    """(target, dependency) for every syncopate:: dependency of every target the build defines."""
    edges, targets = set(), set()
    files = glob.glob(f"{ROOT}/services/*/CMakeLists.txt") + [f"{ROOT}/python/CMakeLists.txt"]
    for path in files:
        text = open(path).read()
        for call in re.finditer(r"syncopate_cc_(?:library|binary)\((.*?)\)\s*$", text, re.S | re.M):
            name = re.search(r"NAME\s+(\S+)", call.group(1)).group(1)
            targets.add(name)
            edges |= {(name, dep) for dep in re.findall(r"syncopate::(\w+)", call.group(1))}
        # The Python module is a pybind11 target.
        for module in re.findall(r"pybind11_add_module\((\w+)", text):
            targets.add(module)
            link = re.search(rf"target_link_libraries\({module}\s+PRIVATE([^)]*)\)", text)
            edges |= {(module, dep) for dep in re.findall(r"syncopate::(\w+)", link.group(1))}
    return targets, edges


def dot_edges():
    text = re.sub(r"//[^\n]*", "", open(f"{ROOT}/docs/architecture.dot").read())
    nodes = set(re.findall(r'^\s*"?([\w-]+)"?\s*(?:\[|;)', text, re.M))
    nodes |= set(re.findall(r'(?<![=\w])"([\w-]+)";', text))
    edges = set()
    for source, targets in re.findall(r'"?([\w-]+)"?\s*->\s*(\{[^}]*\}|"?[\w-]+"?)', text):
        for target in re.findall(r"[\w-]+", targets):
            edges.add((source, target))
    nodes -= {"graph", "node", "edge"}
    return nodes, edges


class ArchitectureTest(unittest.TestCase):
    def test_the_diagram_draws_what_cmake_links(self):
        targets, linked = cmake_edges()
        nodes, drawn = dot_edges()
        self.assertTrue(len(linked) > 30, "not vacuous: the CMake files were read")
        self.assertEqual(sorted(linked - drawn), [], "linked in CMake, not drawn")
        self.assertEqual(sorted(drawn - linked), [], "drawn, not linked in CMake")
        self.assertEqual(sorted(targets - nodes), [], "targets the diagram lacks")
        self.assertEqual(sorted(nodes - targets - {"proto"}), [], "nodes that are not targets")

    def test_the_svg_is_the_diagram_rendered(self):
        with tempfile.NamedTemporaryFile(suffix=".svg") as out:
            subprocess.run(["dot", "-Tsvg", f"{ROOT}/docs/architecture.dot", "-o", out.name],
                           check=True, timeout=60)
            rendered = open(out.name).read()
        self.assertEqual(open(f"{ROOT}/docs/architecture.svg").read(), rendered,
                         "docs/architecture.svg is stale: run scripts/render-architecture.sh")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
