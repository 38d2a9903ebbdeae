#!/usr/bin/env bash
# The chapters' lint, run by `make lint` and by the pre-commit hook "chapters": each chapter
# (default: every book/*.md; else the chapters named) converted to a notebook by jupytext in
# _build/lint, then ruff on its code cells, cell by cell. E402: imports follow the prose;
# E501: a claim's note or a printed line is prose, which ruff format cannot wrap.
#
#   scripts/lint_chapters.sh [book/NN_slug.md ...]
#
# The tools are those of the repository's .venv (`make install`).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/.venv/bin"
out="$root/_build/lint"

for tool in jupytext ruff; do
  if [ ! -x "$bin/$tool" ]; then
    echo "lint_chapters.sh: $bin/$tool not found; run \`make install\` first" >&2
    exit 2
  fi
done
if [ $# -eq 0 ]; then
  set -- "$root"/book/*.md
fi

rm -rf "$out" && mkdir -p "$out"
for chapter in "$@"; do
  if [[ "$chapter" != *.md || ! -f "$chapter" || "$(basename "$(dirname "$chapter")")" != book ]]
  then
    echo "lint_chapters.sh: $chapter is not a chapter (a book/*.md file)" >&2
    exit 2
  fi
  name="$(basename "${chapter%.md}")"
  "$bin/jupytext" --quiet --to ipynb -o "$out/$name.ipynb" "$chapter"
done
"$bin/ruff" check --ignore E402,E501 "$out"/*.ipynb
"$bin/ruff" format --check "$out"/*.ipynb
