# shellcheck shell=bash
# Sourced by the scripts that build the workspace in a scratch copy (scripts/sim-reintroduce.sh,
# scripts/mutation.sh): `scratch_copy ROOT SRC MANIFEST` copies the workspace ROOT as it is
# (uncommitted edits included, without target/ and .git/) into SRC, and records each file's hash
# in MANIFEST.
#
# The copy keeps the files' times. Every file whose content changed since the previous copy (all
# of them when MANIFEST does not exist yet) is touched: a file edited after an earlier run had
# copied the workspace, but before that run built, keeps an edit time older than the build it
# missed, and cargo would take the stale build in the scratch target directory for today's (a
# changed attribute macro was seen so). Files the caller changes itself (a patch, a mutant) are
# the caller's to touch.
scratch_copy() {
    local root=$1 src=$2 manifest=$3
    mkdir -p "$src"
    tar -C "$root" --exclude=./target --exclude=./.git -cf - . | tar -C "$src" -xf -
    (cd "$src" && find . -type f -print0 | sort -z | xargs -0 sha1sum) >"$manifest.new"
    if [ -f "$manifest" ]; then
        diff "$manifest" "$manifest.new" | sed -n 's/^> [0-9a-f]*  //p' |
            while read -r f; do touch "$src/$f"; done
    else
        find "$src" -type f -exec touch {} +
    fi
    mv "$manifest.new" "$manifest"
}
