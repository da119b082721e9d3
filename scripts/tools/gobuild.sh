# Sourced by the scripts that build a Go tool once into the shared cache (scripts/tools/helm, scripts/realkube).
#
#   go_cached_build NAME DIR STEP   # runs `STEP STAGING GO` unless DIR exists; prints nothing on stdout
#
# DIR (under $tools, the cache: KUBERAY_TOOLS_DIR, default ~/.cache/kuberay-tools) appears whole or not at all:
# STEP fills a fresh staging directory that is renamed to DIR only when STEP succeeds, so an interrupted build
# leaves nothing that looks finished. Concurrent callers (parallel tests, worktrees) wait on NAME's lock, so
# only one builds. The build time goes to stderr.
tools=${KUBERAY_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kuberay-tools}

go_cached_build() {
    local name=$1 dir=$2 step=$3 go staging start
    [ -d "$dir" ] && return 0
    mkdir -p "$tools"
    exec 9>"$tools/$name.lock"
    flock 9
    if [ ! -d "$dir" ]; then
        # What a build killed before its rename left (only the lock's holder builds, so none is running).
        rm -rf "$tools/$name-build."*
        go=$(command -v go || echo /usr/local/go/bin/go)
        [ -x "$go" ] || { echo "building $name needs Go; none found on PATH" >&2; return 1; }
        staging=$(mktemp -d "$tools/$name-build.XXXXXX")
        # shellcheck disable=SC2064  # expand now: the trap runs after this function's locals are gone
        trap "rm -rf '$staging'" EXIT
        echo "building $name into $dir with $("$go" version | cut -d' ' -f3) (once)" >&2
        start=$SECONDS
        "$step" "$staging" "$go" >&2
        mv "$staging" "$dir"
        trap - EXIT
        echo "built $name in $((SECONDS - start)) s" >&2
    fi
    exec 9>&-
}
