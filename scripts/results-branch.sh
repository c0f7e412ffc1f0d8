#!/usr/bin/env bash
# Keep a results store on a git branch, so every run starts from the last one's records.
#
#   results-branch.sh restore DIR   merge the branch's store into DIR (an absent branch: DIR
#                                   stays as it is, a first run)
#   results-branch.sh publish DIR   merge DIR into the branch's store, commit and push it
#
# Run inside a clone whose remote may push (Actions: actions/checkout with `contents: write`).
# Both directions go through `repromatrix store merge`, so neither ever drops a record: a
# publish on top of a branch that moved meanwhile keeps both sides. Only the record files
# (*.jsonl) are kept on the branch, under store/; the index is rebuilt from them.
#
# Settings: RESULTS_BRANCH (default results), RESULTS_REMOTE (default origin).
set -euo pipefail

branch="${RESULTS_BRANCH:-results}"
remote="${RESULTS_REMOTE:-origin}"
usage() { echo "usage: $0 restore|publish DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
action="$1" dir="$2"

# 0: the branch exists on the remote (fetched to FETCH_HEAD), 1: it does not; other failures stop.
fetch_branch() {
  local rc=0
  git ls-remote --exit-code --heads "$remote" "refs/heads/$branch" > /dev/null || rc=$?
  if [ "$rc" -eq 2 ]; then return 1; fi
  if [ "$rc" -ne 0 ]; then echo "cannot read $remote (git ls-remote exit $rc)" >&2; exit 3; fi
  git fetch --quiet --depth=1 "$remote" "refs/heads/$branch"
}

tmp="$(mktemp -d)"
trap 'git worktree remove --force "$tmp/tree" > /dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

case "$action" in
  restore)
    mkdir -p "$dir"
    if ! fetch_branch; then
      echo "no branch $branch on $remote yet: starting from an empty store"
      exit 0
    fi
    mkdir -p "$tmp/previous"
    git archive FETCH_HEAD store | tar -x -C "$tmp/previous"
    repromatrix store merge "$tmp/previous/store" --into "$dir"
    ;;
  publish)
    [ -d "$dir" ] || { echo "$dir: no such folder" >&2; exit 2; }
    if fetch_branch; then
      git worktree add --quiet --detach "$tmp/tree" FETCH_HEAD
    else
      git worktree add --quiet --detach "$tmp/tree"
      git -C "$tmp/tree" checkout --quiet --orphan "$branch"
      git -C "$tmp/tree" rm -rfq --ignore-unmatch .
      printf '%s\n' "The results store of repromatrix: one JSON record per line, store/<host>/<run>.jsonl." \
        "Written by scripts/results-branch.sh publish; read with repromatrix report --results store." \
        > "$tmp/tree/README.md"
    fi
    repromatrix store merge "$dir" --into "$tmp/tree/store"
    if [ -z "$(find "$tmp/tree/store" -name '*.jsonl' -print -quit)" ]; then
      echo "no records in $dir: nothing to publish"
      exit 0
    fi
    git -C "$tmp/tree" add -- README.md 'store/*.jsonl'
    if git -C "$tmp/tree" diff --cached --quiet; then
      echo "branch $branch already holds every record of $dir"
      exit 0
    fi
    git -C "$tmp/tree" -c user.name="${GIT_AUTHOR_NAME:-repromatrix}" \
      -c user.email="${GIT_AUTHOR_EMAIL:-repromatrix@users.noreply.github.com}" \
      commit --quiet -m "results: store as of $(date -u +%Y-%m-%dT%H:%MZ)"
    git -C "$tmp/tree" push --quiet "$remote" "HEAD:refs/heads/$branch"
    echo "pushed the store to $remote $branch"
    ;;
  *) usage ;;
esac
