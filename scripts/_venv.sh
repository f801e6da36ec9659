# Sourced by scripts: makes .venv (if missing) and installs the project into it.
# Usage: venv_extra=dev; . scripts/_venv.sh   (venv_extra=dev installs the test tools too)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
# The interpreter .venv is made from: $PYTHON when set; else the distribution's /usr/bin/python3
# when it is 3.11 or newer and can make a venv with pip, since Debian builds it with PGO and LTO,
# linked statically, and the suite runs about 11% faster on it than on a source build linked
# against a shared libpython without them (pyenv's default, the first python3 on this machine's
# PATH); else python3.
pick_python() {
  if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"; return; fi
  if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo /usr/bin/python3; return
  fi
  echo python3
}
PY="$(pick_python)"
extra="${venv_extra:-}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "swamp: creating $VENV with $PY" >&2
  if ! "$PY" -m venv "$VENV" && [ "$PY" != python3 ]; then
    echo "swamp: $PY could not make it; trying python3" >&2
    rm -rf "$VENV"
    python3 -m venv "$VENV"
  fi
fi
stamp="$VENV/.installed${extra:+-$extra}"
# the dev extra includes the plain install: scripts/demo and scripts/install after scripts/test reuse it
if [ -z "$extra" ] && [ -f "$VENV/.installed-dev" ] && [ ! "$ROOT/pyproject.toml" -nt "$VENV/.installed-dev" ]; then
  stamp="$VENV/.installed-dev"
fi
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
  echo "swamp: installing the project${extra:+ with [$extra]} into .venv" >&2
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --config-settings editable_mode=compat -e "$ROOT${extra:+[$extra]}" 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory" >&2 || true
  "$VENV/bin/python" -c "import swamp, cel_expr_python" >/dev/null
  touch "$stamp"
fi
export PATH="$VENV/bin:$PATH"
