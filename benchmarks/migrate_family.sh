#!/bin/bash
# Measure `migrate` on the family's raw trees (not part of the test suite: it needs clones).
#   benchmarks/migrate_family.sh RAW_DIR WORK_DIR   # RAW_DIR holds one clone per repository
# Per repository: the report-only scan, one run with --write --delete-vendored --to-python3
# (timed), a second run (are the files unchanged?), python -m compileall -q, and the imports
# of deleted files (benchmarks/migrate_dangling.py).
raw=$1; work=$2; here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
for r in $(ls "$raw"); do
  rm -rf "$work/$r"; cp -r "$raw/$r" "$work/$r"; rm -rf "$work/$r/.git"
  python -m mxpatch_bind migrate "$work/$r" > "$work/$r.scan.txt" 2>&1
  s=$(date +%s.%N)
  python -m mxpatch_bind migrate "$work/$r" --write --delete-vendored --to-python3 > "$work/$r.run1.txt" 2>&1; rc1=$?
  e=$(date +%s.%N)
  (cd "$work" && find "$r" -type f -print0 | sort -z | xargs -0 md5sum > "$r.sum1")
  python -m mxpatch_bind migrate "$work/$r" --write --delete-vendored --to-python3 > "$work/$r.run2.txt" 2>&1; rc2=$?
  (cd "$work" && find "$r" -type f -print0 | sort -z | xargs -0 md5sum > "$r.sum2")
  same=$(cmp -s "$work/$r.sum1" "$work/$r.sum2" && echo unchanged || echo CHANGED)
  python -m compileall -q "$work/$r" > "$work/$r.compile.txt" 2>&1; cc=$?
  find "$work/$r" -name __pycache__ -type d -prune -exec rm -rf {} +
  dangling=$(python "$here/migrate_dangling.py" "$work/$r" "$work/$r.run1.txt" | head -1)
  echo "$r | scan: $(tail -1 "$work/$r.scan.txt" | sed 's/migrate: //') | run1 rc=$rc1 $(printf %.1f "$(echo "$e-$s" | bc)")s: $(tail -1 "$work/$r.run1.txt" | sed 's/migrate: //') | run2 rc=$rc2 $same: $(tail -1 "$work/$r.run2.txt" | sed 's/migrate: //') | compileall rc=$cc | $dangling"
done
