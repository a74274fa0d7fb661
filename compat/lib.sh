# Shared by compat/*/run: sourced, not executed.
#   compat_python            the interpreter (PYTHON, else the repository's .venv)
#   pin_pip NAME VERSION     make sure NAME==VERSION is installed in that interpreter
set -euo pipefail
COMPAT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(dirname "$COMPAT_DIR")"
cd "$REPO_DIR"
PY="${PYTHON:-$REPO_DIR/.venv/bin/python}"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

pin_pip() {
    local name=$1 version=$2 have
    have=$("$PY" -c "import importlib.metadata as m; print(m.version('$name'))" 2>/dev/null || true)
    if [ "$have" != "$version" ]; then
        echo "== installing $name==$version (found: ${have:-none})"
        "$PY" -m pip install --quiet "$name==$version"
    fi
}
