#!/bin/sh
# Print the path of a Python >= 3.12 (Django 6 needs it), or explain and fail.
# Order: $PYTHON, python3.12, python3.13, the oldest pyenv 3.12+ (the tested one), python3.
ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }
for candidate in "$PYTHON" python3.12 python3.13; do
    [ -n "$candidate" ] || continue
    path=$(command -v "$candidate" 2>/dev/null) || continue
    if ok "$path"; then echo "$path"; exit 0; fi
done
if command -v pyenv >/dev/null 2>&1; then
    for version in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.(1[2-9]|[2-9][0-9])' | sort -V); do
        path="$(pyenv root)/versions/$version/bin/python3"
        if ok "$path"; then echo "$path"; exit 0; fi
    done
fi
if ok python3; then command -v python3; exit 0; fi
echo "hindsight needs Python >= 3.12 (Django 6). Install one (e.g. 'pyenv install 3.12'), or set PYTHON=/path/to/python3.12." >&2
exit 1
