# Sourced by scripts: makes .venv (if missing) and installs the project into it.
# Usage: venv_extra=dev; . scripts/_venv.sh   (venv_extra=dev installs the test tools too)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="${PYTHON:-python3}"
extra="${venv_extra:-}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "swamp: creating $VENV" >&2
  "$PY" -m venv "$VENV"
fi
stamp="$VENV/.installed${extra:+-$extra}"
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
  echo "swamp: installing the project${extra:+ with [$extra]} into .venv" >&2
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --config-settings editable_mode=compat -e "$ROOT${extra:+[$extra]}" 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory" >&2 || true
  "$VENV/bin/python" -c "import swamp, cel_expr_python" >/dev/null
  touch "$stamp"
fi
export PATH="$VENV/bin:$PATH"
