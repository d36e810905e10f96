#!/usr/bin/env bash
# Commit subjects of at most 72 characters (the body says the rest), for every
# commit since the last tag, or since the commit named in .ci/subjects-since
# (where the rule started). Prints the ones that are longer; exit 1 if any.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
since="$(git describe --tags --abbrev=0 2>/dev/null || cat .ci/subjects-since)"
if ! git rev-parse --verify --quiet "$since^{commit}" >/dev/null; then
  # A shallow clone without that commit: the newest commit is checked alone.
  since="HEAD~1"
  git rev-parse --verify --quiet "$since" >/dev/null || since=""
fi
range="${since:+$since..}HEAD"
long="$(git log --format='%h %s' "$range" | awk '{ subject = substr($0, index($0, " ") + 1); if (length(subject) > 72) printf "%s (%d characters)\n", $0, length(subject) }')"
count="$(git rev-list --count "$range")"
if [ -n "$long" ]; then
  printf 'commit subjects over 72 characters since %s:\n%s\n' "${since:-the start}" "$long"
  exit 1
fi
echo "$count commit subjects since ${since:-the start}, none over 72 characters"
