#!/bin/sh
# Create (or recreate, if it was made with a Python < 3.12) the virtual environment.
set -e
venv=${1:-.venv}
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)'; then
    exit 0
fi
python=$(dirname "$0")/find_python.sh
python=$("$python")
echo "creating $venv with $python ($("$python" --version))"
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
