#!/usr/bin/env bash
# The first release's last step (docs/releasing.md): makes the release workflow the trusted
# publisher of each of the 18 packages (both packages and their 16 platform packages) with
# `npm trust github`, which npm allows only on a package that exists. From then on, a tag
# publishes with no token at all. Run it once, after the first publish, logged in to npm
# (`npm login`, an owner of the packages, 2FA on the account; npm asks for a code once, and
# offers to skip it for the next five minutes, which covers the 18).
#
#   scripts/npm-trust.sh              # every package
#   DRY_RUN=1 scripts/npm-trust.sh    # what it would set (npm trust --dry-run)
# A package that has a trusted publisher already (npm allows one) is shown and left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/common.sh
WORKFLOW=release.yml # .github/workflows/release.yml, its publish job
ENVIRONMENT=npm      # that job's environment
REPO=$(node -p 'require("./package.json").repository.url.match(/github\.com[/:](.+?)(\.git)?$/)[1]')
# The names, from the manifests napi's create-npm-dirs writes (__test__/release-files.test.ts).
mapfile -t NAMES < <(node -p 'process.argv.slice(1).map((f) => require(f).name).join("\n")' \
  ./package.json ./npm/*/package.json ./testing/package.json ./testing/npm/*/package.json)
[ "${#NAMES[@]}" = 18 ] || fail "expected 18 packages, found ${#NAMES[@]}"
npm --version | node -e 'const [a, b] = require("fs").readFileSync(0, "utf8").split(".").map(Number); process.exit(a > 11 || (a === 11 && b >= 15) ? 0 : 1)' ||
  fail "npm trust needs npm 11.15 or later, not $(npm --version)"
npm whoami >/dev/null || fail "log in to npm first (npm login)"

echo "trusted publisher: github.com/$REPO, .github/workflows/$WORKFLOW, environment $ENVIRONMENT" >&2
for name in "${NAMES[@]}"; do
  existing=$(npm trust list "$name" --json)
  if [ -n "$existing" ] && [ "$existing" != "[]" ]; then
    echo "$name has a trusted publisher already: left alone" >&2
    echo "$existing" >&2
    continue
  fi
  say "$name"
  npm trust github "$name" --file "$WORKFLOW" --repository "$REPO" --environment "$ENVIRONMENT" --allow-publish --yes \
    ${DRY_RUN:+--dry-run}
  sleep 2 # npm's advice for a loop of these: under its rate limit
done
echo "npm-trust.sh: ${#NAMES[@]} packages published by $REPO's $WORKFLOW alone" >&2
