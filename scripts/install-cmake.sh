#!/usr/bin/env bash
# Installs the CMake pinned in scripts/cmake-requirements.txt (the `cmake` wheel from PyPI,
# checked against the SHA-256 listed there)
# into a virtual environment under target/tools/cmake-venv ($CARGO_TARGET_DIR/tools/cmake-venv when
# that is set), for tests/tests/packaging.rs, which runs this script itself on first use.
# A no-op when the installed version already matches the pin. Needs python3 with venv and
# the PyPI registry (or a pip mirror configured the usual way).
#   bash scripts/install-cmake.sh      -> target/tools/cmake-venv/bin/cmake
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

requirements=scripts/cmake-requirements.txt
venv="${CARGO_TARGET_DIR:-target}/tools/cmake-venv"
want="$(sed -n 's/^cmake==\([^ ]*\).*/\1/p' "$requirements")"
if [ -z "$want" ]; then
    echo "error: no cmake==VERSION pin in $requirements" >&2
    exit 1
fi
if [ -x "$venv/bin/cmake" ] && "$venv/bin/cmake" --version | head -n 1 | grep -qx "cmake version $want"; then
    echo "cmake $want is installed ($venv/bin/cmake)"
    exit 0
fi
echo "installing cmake $want from PyPI into $venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --only-binary=:all: -r "$requirements"
"$venv/bin/cmake" --version | head -n 1
