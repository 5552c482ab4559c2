#!/bin/sh
# Print the first supported Python on PATH (3.11, 3.12 or 3.13: what requirements.lock is resolved for), or print
# one line saying none was found to stderr and exit 1. The Makefile builds .venv with it.
for candidate in python3.11 python3.12 python3.13 python3; do
  path=$(command -v "$candidate" 2>/dev/null) || continue
  if "$path" -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' 2>/dev/null; then
    echo "$path"
    exit 0
  fi
done
found=$(python3 --version 2>&1 || echo "no python3")
echo "error: switchboard needs Python 3.11, 3.12 or 3.13 (found: $found); install one, or run make PYTHON=/path/to/python3.x" >&2
exit 1
