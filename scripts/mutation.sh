#!/usr/bin/env bash
# The mutation run of the simulated kernel (issue 22, item 4): which share of the mutants of the
# reactor and the stream transport the simulation suite kills, against the plain (real-kernel)
# tests of the same files. cargo-mutants generates the mutants; this script runs a deterministic
# random sample of them in a scratch copy of the workspace (never in the workspace itself), one
# build per mutant, then BOTH suites on that build, and writes one line per mutant:
#
#   scripts/mutation.sh [-n SAMPLE] [-s SEED] [-o RESULTS.tsv]
#
# -n  mutants in the sample (100); -s the sample's seed (22): the same seed and the same source
#     give the same mutants in the same order, so a larger -n extends a smaller run;
# -o  the results file (MUT_SCRATCH/results-SEED.tsv); mutants already in it are skipped, so an
#     interrupted run resumes where it stopped.
#
# The files (MUT_FILES overrides): the reactor (event_loop/reactor.rs: epoll, the registration
# slabs, the readiness bits and dispatch; event_loop/fds.rs: the loop's side of the reactor's
# fd bookkeeping) and the stream transport (io/stream/*.rs: TcpStream/UnixStream, their reader
# and writer halves, open/connect, and io/protocol/transport.rs: the protocol transport).
#
# The suites, each a list of test binaries of evloop-tests run one after the other with a
# time limit for the whole suite (a mutant that hangs counts as a timeout):
#   SIM   = tests/tests/sim/ (target `sim`) and `sim_replay`: the simulated kernel;
#   PLAIN = the real-kernel tests that exercise these files: `event_loop`, `io`, `io_ported`,
#           `net_streams`, `net_faults`, `fault_recovery`, `net_asyncfd`, `net_datagram`,
#           `loop_close_cycles`, `prop_reactor_table` and `fault_matrix` (the slowest, last).
# The runtime's own unit tests are left out: none of them touches these files (they have no
# `#[cfg(test)]` code), and they would cost a second build of the runtime per mutant.
#
# Environment: MUT_SCRATCH (${TMPDIR:-/tmp}/evloop-mutation) the scratch copy and its cargo
# target directory, kept between runs; MUT_PLAIN_TIMEOUT (100) and MUT_SIM_TIMEOUT (120) seconds
# per suite (about three and six times their unmutated run on 2 busy CPUs, 35 s and 20 s since
# the sim binary took the stream suites; raise both on a machine that other builds load: the
# unmutated plain suite was seen to take 147 s and the sim suite 88 s there); MUT_BUILD_TIMEOUT
# (1200) seconds per build; MUT_DEADLINE, an epoch second after which no new mutant starts (for
# a run that must end by a given time).
#
# Rerunning one suite on chosen mutants (after that suite changed): MUT_ONLY=sim (or plain)
# builds and runs that suite alone and writes '-' in the other column; MUT_INDEXES (indexes of
# the sample, e.g. "0007 0008 0101", spaces or commas) runs only those mutants (-n must reach
# the largest). Give such a run its own -o file: its lines are not comparable with a run of
# both suites, and mutants already in the file are skipped. MUT_MUTANTS=DIR takes the sample
# from an earlier run's list (DIR/index.tsv and DIR/NNNN.diff, i.e. MUT_SCRATCH/mutants) instead
# of listing today's source: once the files changed, today's list and order differ, so an index
# names another mutant. Its diffs are applied to today's source (patch allows moved lines); a
# mutant whose code has changed since is recorded as 'gone' and counted nowhere.
# MUT_SIM_TARGETS ("sim sim_replay") narrows the simulation suite: a rerun on the mutants the
# earlier suite let survive needs only the targets that changed (`sim`), since the others
# already passed on those mutants. MUT_SIM_STAGES ("a b|c|") runs the `sim` target in stages,
# each with its test-name filters, '|' between stages, an empty stage for all of it, stopping
# at the first that fails: a failing simulated test shrinks its schedule before it reports, so
# a mutant that breaks many tests costs minutes; a first stage of the tests most likely to fail
# kills it in seconds. With a last empty stage, a survivor still passes the whole target.
#
# Results, one tab-separated line per mutant: index, plain, sim (killed / survived / timeout /
# unviable), build seconds, plain seconds, sim seconds, the mutant (file:line:col: what). The
# summary at the end counts: killed by both, by the simulation only, by the plain tests only, by
# neither, timeouts, unviable, and each suite's kill rate over the viable mutants.
set -u -o pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
sample=100
seed=22
out=
while getopts "n:s:o:" opt; do
    case $opt in
        n) sample=$OPTARG ;;
        s) seed=$OPTARG ;;
        o) out=$OPTARG ;;
        *) sed -n '2,14p' "$0" >&2; exit 2 ;;
    esac
done
scratch=${MUT_SCRATCH:-${TMPDIR:-/tmp}/evloop-mutation}
out=${out:-$scratch/results-$seed.tsv}
plain_limit=${MUT_PLAIN_TIMEOUT:-100}
sim_limit=${MUT_SIM_TIMEOUT:-120}
build_limit=${MUT_BUILD_TIMEOUT:-1200}
deadline=${MUT_DEADLINE:-}
only=${MUT_ONLY:-}
mutants_dir=${MUT_MUTANTS:-}
sim_stages=${MUT_SIM_STAGES:-}
indexes=" $(echo "${MUT_INDEXES:-}" | tr ',' ' ') "
case $only in
    "" | sim | plain) ;;
    *) echo "MUT_ONLY is sim or plain, not '$only'" >&2; exit 2 ;;
esac
files=${MUT_FILES:-"runtime/src/event_loop/reactor.rs runtime/src/event_loop/fds.rs \
runtime/src/io/stream/config.rs runtime/src/io/stream/conn.rs runtime/src/io/stream/error.rs \
runtime/src/io/stream/mod.rs runtime/src/io/stream/open.rs runtime/src/io/stream/reader.rs \
runtime/src/io/stream/writer.rs runtime/src/io/protocol/transport.rs"}
read -r -a sim_tests <<<"${MUT_SIM_TARGETS:-sim sim_replay}"
plain_tests=(event_loop io io_ported net_streams net_faults fault_recovery net_asyncfd net_datagram
    loop_close_cycles prop_reactor_table fault_matrix)
# One suite alone (MUT_ONLY): the other is neither built nor run.
[ "$only" = sim ] && plain_tests=()
[ "$only" = plain ] && sim_tests=()

command -v cargo-mutants >/dev/null || {
    echo "cargo-mutants is missing: cargo install cargo-mutants --locked" >&2
    exit 2
}
src=$scratch/src
export CARGO_TARGET_DIR=$scratch/target
# Line tables are not needed to see a test fail, and they make every link slower.
export CARGO_PROFILE_DEV_DEBUG=0
mkdir -p "$scratch/logs" "$src"
touch "$out"

# The scratch copy (scripts/scratch-copy.sh: the workspace as it is, without target/ and .git/,
# files changed since the previous run's copy touched, so that cargo cannot take a build left in
# the target directory for today's).
# shellcheck source=scripts/scratch-copy.sh
. "$root/scripts/scratch-copy.sh"
scratch_copy "$root" "$src" "$scratch/manifest"
# A run stopped in the middle of a mutant left that mutant in the copy and its build in the
# target directory; the copy above put the original back with the workspace's older time, so
# cargo would take the mutant's build for the original's. The mutated files are rebuilt anyway.
for f in $files; do touch "$src/$f"; done

# The mutants, with their diffs, shuffled by the seed; the sample is the first $sample. With
# MUT_MUTANTS, an earlier run's list (its index.tsv and NNNN.diff files) is taken instead.
if [ -n "$mutants_dir" ]; then
    mdir=$(cd "$mutants_dir" && pwd)
    echo "the sample of $mdir (first $sample)" >&2
else
    mdir=$scratch/mutants
    file_args=()
    for f in $files; do file_args+=(-f "$f"); done
    (cd "$src" && cargo mutants --list --json --diff "${file_args[@]}") >"$scratch/mutants.json" || exit 2
    rm -rf "$mdir"
    mkdir -p "$mdir"
    python3 - "$scratch/mutants.json" "$scratch/mutants" "$seed" "$sample" <<'EOF' || exit 2
import json, random, sys
mutants = json.load(open(sys.argv[1]))
dest, seed, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
mutants.sort(key=lambda m: m["name"])  # cargo-mutants' own order may change between versions
random.Random(seed).shuffle(mutants)
print(f"{len(mutants)} mutants in the files; sample of {min(n, len(mutants))} with seed {seed}",
      file=sys.stderr)
with open(f"{dest}/index.tsv", "w") as index:
    for i, m in enumerate(mutants[:n]):
        with open(f"{dest}/{i:04}.diff", "w") as d:
            d.write(m["diff"])
        index.write(f"{i:04}\t{m['file']}\t{m['name']}\n")
EOF
fi
head -n "$sample" "$mdir/index.tsv" >"$scratch/sample.tsv"

# Builds every test binary of both suites; prints "target<TAB>executable" lines.
build() {
    local args=()
    for t in "${plain_tests[@]}" "${sim_tests[@]}"; do args+=(--test "$t"); done
    (cd "$src" && timeout "$build_limit" nice -n 10 cargo test -p evloop-tests "${args[@]}" --no-run \
        --message-format=json) | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"] + "\t" + m["executable"])'
}

# Runs one suite (the named binaries, in order, stopping at the first failure) under its time
# limit; prints killed, survived or timeout, and the seconds it took ('- 0' for no binaries:
# the suite MUT_ONLY left out).
run_suite() {
    local limit=$1 log=$2
    shift 2
    if [ $# -eq 0 ]; then
        echo "- 0"
        return
    fi
    local cmd="" t stage
    for t in "$@"; do
        if [ "$t" = sim ] && [ -n "$sim_stages" ]; then
            # The sim target in stages (test-name filters), stopping at the first that fails.
            while IFS= read -r stage; do cmd+="${exe[$t]} -q $stage && "; done < <(tr '|' '\n' <<<"$sim_stages")
        else
            cmd+="${exe[$t]} -q && "
        fi
    done
    local start=$SECONDS code
    (cd "$src/tests" && CARGO_MANIFEST_DIR=$src/tests timeout -k 10 "$limit" nice -n 10 \
        bash -c "${cmd}true") >"$log" 2>&1
    code=$?
    case $code in
        0) echo "survived $((SECONDS - start))" ;;
        124 | 137) echo "timeout $((SECONDS - start))" ;;
        *) echo "killed $((SECONDS - start))" ;;
    esac
}

declare -A exe
load_exes() {
    local t e
    exe=()
    while IFS=$'\t' read -r t e; do exe[$t]=$e; done <"$1"
    for t in "${plain_tests[@]}" "${sim_tests[@]}"; do
        [ -n "${exe[$t]:-}" ] || return 1
    done
}

# The baseline: both suites pass on the unmutated tree, or no mutant's result means anything.
echo "== baseline build" >&2
start=$SECONDS
build >"$scratch/exes.tsv" 2>"$scratch/logs/baseline-build.log" && load_exes "$scratch/exes.tsv" || {
    echo "the unmutated tree does not build: see $scratch/logs/baseline-build.log" >&2
    exit 2
}
echo "   built in $((SECONDS - start)) s" >&2
read -r p ps < <(run_suite "$plain_limit" "$scratch/logs/baseline-plain.log" "${plain_tests[@]}")
read -r s ss < <(run_suite "$sim_limit" "$scratch/logs/baseline-sim.log" "${sim_tests[@]}")
echo "   plain: $p in $ps s; sim: $s in $ss s" >&2
if [ "$p" = killed ] || [ "$p" = timeout ] || [ "$s" = killed ] || [ "$s" = timeout ]; then
    echo "the unmutated tree fails its tests: see $scratch/logs/baseline-*.log" >&2
    exit 2
fi

while IFS=$'\t' read -r i file name; do
    grep -q "^$i"$'\t' "$out" && continue
    [ "$indexes" = "  " ] || [[ "$indexes" == *" $i "* ]] || continue
    if [ -n "$deadline" ] && [ "$(date +%s)" -ge "$deadline" ]; then
        echo "deadline reached: mutant $i and later not run" >&2
        break
    fi
    echo "== $i $name" >&2
    cp "$src/$file" "$scratch/original"
    if ! patch --no-backup-if-mismatch -s "$src/$file" <"$mdir/$i.diff" >&2; then
        cp "$scratch/original" "$src/$file"
        touch "$src/$file"
        rm -f "$src/$file.rej" "$src/$file.orig"
        echo "the diff of mutant $i does not apply" >&2
        # An earlier run's mutant whose code has changed since: recorded, counted nowhere.
        [ -n "$mutants_dir" ] || exit 2
        printf '%s\t%s\t%s\t0\t0\t0\t%s\n' "$i" gone gone "$name" >>"$out"
        continue
    fi
    start=$SECONDS
    if build >"$scratch/exes.tsv" 2>"$scratch/logs/$i-build.log" && load_exes "$scratch/exes.tsv"; then
        b=$((SECONDS - start))
        read -r p ps < <(run_suite "$plain_limit" "$scratch/logs/$i-plain.log" "${plain_tests[@]}")
        read -r s ss < <(run_suite "$sim_limit" "$scratch/logs/$i-sim.log" "${sim_tests[@]}")
    else
        b=$((SECONDS - start)) p=unviable s=unviable ps=0 ss=0
    fi
    # The original comes back with a new time, so the next build cannot reuse the mutant's.
    cp "$scratch/original" "$src/$file"
    touch "$src/$file"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "$p" "$s" "$b" "$ps" "$ss" "$name" >>"$out"
    echo "   plain $p, sim $s (build $b s, plain $ps s, sim $ss s)" >&2
done <"$scratch/sample.tsv"

# The summary: a timeout counts as a kill (the suite did not pass), and is also listed apart; a
# suite that was not run ('-', MUT_ONLY) counts as not killing.
awk -F'\t' '
    { n++ }
    $2 == "gone" { n--; next }
    $2 == "unviable" { unviable++; next }
    { viable++
      pk = ($2 == "killed" || $2 == "timeout"); sk = ($3 == "killed" || $3 == "timeout")
      if ($2 == "timeout" || $3 == "timeout") timeouts++
      if (pk && sk) both++; else if (sk) simonly++; else if (pk) plainonly++; else neither++
      plain += pk; sim += sk }
    END {
      printf "mutants run: %d (unviable: %d, viable: %d)\n", n, unviable, viable
      printf "killed by both: %d, by the simulation only: %d, by the plain tests only: %d, by neither: %d\n",
        both, simonly, plainonly, neither
      printf "timeouts (counted as kills): %d\n", timeouts
      if (viable) {
        printf "kill rate, simulation suite: %d/%d = %.1f%%\n", sim, viable, 100 * sim / viable
        printf "kill rate, plain suite:      %d/%d = %.1f%%\n", plain, viable, 100 * plain / viable
      }
    }' "$out"
# Per file: mutants, unviable, viable, killed by each suite, timeouts.
printf '\n%-28s %5s %8s %6s %6s %4s %8s\n' file mutants unviable viable plain sim timeouts
awk -F'\t' '
    { split($7, a, ":"); f = a[1]; sub(/.*runtime\/src\//, "", f); n[f]++ }
    $2 == "gone" { n[f]--; next }
    $2 == "unviable" { u[f]++; next }
    { v[f]++; p[f] += ($2 == "killed" || $2 == "timeout"); s[f] += ($3 == "killed" || $3 == "timeout"); t[f] += ($2 == "timeout" || $3 == "timeout") }
    END { for (f in n) printf "%-28s %5d %8d %6d %6d %4d %8d\n", f, n[f], u[f], v[f], p[f], s[f], t[f] }' "$out" | sort
echo "results: $out; logs: $scratch/logs/"
