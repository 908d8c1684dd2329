#!/usr/bin/env bash
# The bug-finding proof of the simulated kernel (issue 22, item 4): puts back, one at a time and
# in a scratch copy of the workspace, a bug that was found outside evloop's tests and fixed
# (scripts/sim-bugs/*.patch), runs the simulation tests the patch names with up to 1,000 seeds,
# and reports per bug whether the simulation found it, with which seed, and how small the
# failing schedule shrank. The workspace itself is never touched.
#
#   scripts/sim-reintroduce.sh [PATCH...]        (default: every scripts/sim-bugs/*.patch)
#
# Environment: SIM_BUG_SEEDS (1000) seeds per simulated test; SIM_BUG_SCRATCH (a directory under
# $TMPDIR) the scratch copy and its cargo target directory, kept between runs so that each bug
# costs an incremental build; SIM_BUG_LIMIT (900) seconds one bug's test run may take (its
# build is not counted); SIM_BUG_TESTS, when set, replaces every patch's test filters (empty:
# the whole simulation suite; `--skip outside_bugs`: the suite without the tests added for
# these bugs).
#
# A patch starts with a header of `# Key: value` lines before its diff:
#   # Bug: what the patch restores          # Fixed by: the commit that fixed it
#   # Tests: test-name filters of the `sim` test binary (tests/tests/sim/), space separated
# Run bugs one at a time (the machine's cores are shared); `make sim-bugs` runs them all.
set -u -o pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seeds=${SIM_BUG_SEEDS:-1000}
limit=${SIM_BUG_LIMIT:-900}
scratch=${SIM_BUG_SCRATCH:-${TMPDIR:-/tmp}/evloop-sim-bugs}
src=$scratch/src
export CARGO_TARGET_DIR=$scratch/target
mkdir -p "$scratch/logs"

patches=("$@")
if [ ${#patches[@]} -eq 0 ]; then
    patches=("$root"/scripts/sim-bugs/*.patch)
fi

# The scratch copy (scripts/scratch-copy.sh: the workspace as it is, without target/ and .git/,
# files changed since the previous run's copy touched). The copy keeps the files' times, so
# every file a patch touches is touched now: a build left in the target directory by an earlier
# run (of a patched file, say) cannot pass for today's. Each patch is taken out again after its
# run (git apply -R), which touches its files.
# shellcheck source=scripts/scratch-copy.sh
. "$root/scripts/scratch-copy.sh"
rm -rf "$src"
scratch_copy "$root" "$src" "$scratch/manifest"
sed -n 's|^+++ b/||p' "$root"/scripts/sim-bugs/*.patch "${patches[@]}" | sort -u |
    while read -r f; do touch "$src/$f"; done

header() { sed -n "s/^# $2: //p" "$1" | head -n 1; }

results=()
status=0
for patch in "${patches[@]}"; do
    name=$(basename "$patch" .patch)
    bug=$(header "$patch" Bug)
    tests=${SIM_BUG_TESTS-$(header "$patch" Tests)}
    log=$scratch/logs/$name.log
    echo "== $name: $bug" >&2
    if ! (cd "$src" && git apply "$patch"); then
        results+=("$name|does not apply|-|-")
        status=1
        continue
    fi
    # The build first, outside the time limit (the first one builds every dependency).
    if ! (cd "$src" && "${CARGO:-cargo}" test -p evloop-tests --test sim --no-run) >"$log" 2>&1; then
        (cd "$src" && git apply -R "$patch")
        results+=("$name|build failed (see $log)|-|-")
        status=1
        continue
    fi
    # shellcheck disable=SC2086 # the filters are separate words
    (cd "$src" && EVLOOP_SEEDS=$seeds timeout "$limit" \
        "${CARGO:-cargo}" test -p evloop-tests --test sim -- $tests --test-threads=2) >>"$log" 2>&1
    code=$?
    (cd "$src" && git apply -R "$patch") || { echo "could not take $patch out again" >&2; exit 2; }
    failed=$(sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$log" | sort -u | tr '\n' ' ')
    # Per failing simulated test (the driver's report, harness.rs): its seed, and its schedule's
    # non-zero decisions out of all of them, before and after shrinking.
    found=$(awk '
        / failed with seed [0-9]+:/ {
            name = $1; sub(/:$/, "", name); sub(/^sim::/, "", name)
            seed = $0; sub(/.* failed with seed /, "", seed); sub(/:.*/, "", seed)
        }
        /^its schedule shrank from / && name != "" {
            split($0, w, /[ (]+/)
            printf "%s: seed %s, %s of %s -> %s of %s; ", name, seed, w[7], w[5], w[15], w[14]
            name = ""
        }' "$log")
    tapes=$(grep -o "EVLOOP_SEED=[0-9]* EVLOOP_TAPE='[^']*' cargo test [a-z_]*" "$log")
    if [ $code -eq 124 ]; then
        results+=("$name|hang (no result in ${limit}s)|-|$failed")
        status=1
    elif [ $code -eq 0 ]; then
        results+=("$name|NOT FOUND in $seeds seeds|-|-")
        status=1
    elif [ -z "$failed" ]; then
        results+=("$name|failed without a failing test (see $log)|-|-")
        status=1
    else
        results+=("$name|found|${found:-a fixed-seed test}|$failed")
        [ -n "$tapes" ] && echo "$tapes" | sed 's/^/   replay: /' >&2
    fi
    echo "   ${results[-1]}" >&2
done

echo
echo "| bug | found? | per simulated test: first failing seed (seeds needed = seed + 1), non-zero decisions of all before -> after shrinking | failing tests |"
echo "|-----|--------|------|------|"
for r in "${results[@]}"; do
    IFS='|' read -r n f s t <<<"$r"
    echo "| $n | $f | $s | $t |"
done
echo
echo "logs: $scratch/logs/"
exit $status
