#!/usr/bin/env bash
# Renders docs/architecture.dot (the libraries and what each links) to docs/architecture.svg with
# Graphviz. tests/docs/architecture_test.py fails when the SVG is not this script's output.
set -euo pipefail
cd "$(dirname "$0")/.."
dot -Tsvg docs/architecture.dot -o docs/architecture.svg
