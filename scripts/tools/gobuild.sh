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

# The Kubernetes release the real control plane and the real node are built at (scripts/realkube, scripts/tools/node).
kubernetes_version=v1.37.2

# kubernetes_build STAGING GO PACKAGE...   # `go build`s k8s.io/kubernetes packages into STAGING/bin
#
# k8s.io/kubernetes replaces its staging modules (k8s.io/api, k8s.io/apimachinery, ...) with its own ./staging
# tree, which a dependent module cannot see, so the generated go.mod in STAGING/src pins each to the matching
# published v0.X.Y. Nothing of their source enters the repository.
kubernetes_build() {
    local staging=$1 go=$2 upstream minor
    shift 2
    mkdir "$staging/src" && cd "$staging/src"
    upstream=$("$go" mod download -json "k8s.io/kubernetes@$kubernetes_version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
    minor=${kubernetes_version#v1.}
    {
        printf 'module kuberay.invalid/realkube\n\ngo %s\n\nrequire k8s.io/kubernetes %s\n\n' \
            "$(sed -n 's/^go //p' "$upstream")" "$kubernetes_version"
        # Every staging module k8s.io/kubernetes requires (at the placeholder v0.0.0), at v0.<minor>.<patch>.
        sed -n 's/^[[:space:]]*\(k8s\.io\/[a-z0-9-]*\) v0\.0\.0$/replace \1 => \1 v0.'"$minor"'/p' "$upstream"
    } > go.mod
    local version_pkg=k8s.io/component-base/version
    local ldflags="-s -w -X $version_pkg.gitVersion=$kubernetes_version -X $version_pkg.gitMajor=1"
    ldflags+=" -X $version_pkg.gitMinor=${minor%%.*} -X $version_pkg.gitTreeState=clean"
    # -mod=mod: go.sum is filled from the proxy's checksummed answers while building.
    CGO_ENABLED=0 GOFLAGS="-trimpath -mod=mod -buildvcs=false" nice -n 10 "$go" build -ldflags="$ldflags" \
        -o "$staging/bin/" "$@"
}
