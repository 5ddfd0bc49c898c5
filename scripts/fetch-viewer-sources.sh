#!/usr/bin/env bash
# The sources of the Windows viewer's GLFW and Dear ImGui: Debian's own source packages (glfw3,
# imgui), the releases of the Linux viewer's libglfw3-dev and libimgui-dev, fetched from the Debian
# mirror this machine's apt already uses and unpacked (Debian's patches applied) into
#   build-windows/third-party/src/glfw3, .../imgui        (RFA_WINDOWS_DEPS replaces build-windows/third-party)
# scripts/test-windows.sh builds them for MinGW-w64 (cmake/viewer-deps/). Run by
# `scripts/install-deps.sh windows`; set-up time only: nothing is downloaded at build or run time,
# and no third-party source enters the repository. apt verifies every file against the mirror's
# signed Sources index; the lists live in a private folder, so /etc/apt stays as it was.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps=${RFA_WINDOWS_DEPS:-$root/build-windows/third-party}
src=$deps/src
# Source package <- the binary package whose release the Linux viewer uses.
declare -A BINARY=([glfw3]=libglfw3-dev [imgui]=libimgui-dev)

missing=()
for pkg in glfw3 imgui; do
  [ -f "$src/$pkg/.rfa-version" ] || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

# The mirror apt uses for Debian main (deb822 .sources or one-line sources.list), else the default.
mirror=$(sed -n 's/^URIs:[[:space:]]*\(http[^[:space:]]*\/debian\)\/\{0,1\}$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
[ -n "$mirror" ] || mirror=$(sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\{0,1\}\(http[^[:space:]]*\/debian\)\/\{0,1\}[[:space:]].*/\2/p' \
                             /etc/apt/sources.list 2>/dev/null | head -1)
mirror=${mirror:-http://deb.debian.org/debian}
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")

apt_dir=$deps/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$src"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" > "$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o Debug::NoLocking=1)
# As root apt would hand the download to its _apt user, which cannot write to this folder.
[ "$(id -u)" -eq 0 ] && apt_opts+=(-o APT::Sandbox::User=root)
echo "fetch-viewer-sources: ${missing[*]} from $mirror $suite (deb-src)"
apt-get "${apt_opts[@]}" -qq update

for pkg in "${missing[@]}"; do
  want=$(dpkg-query -W -f='${source:Version}' "${BINARY[$pkg]}" 2>/dev/null || true)
  work=$(mktemp -d "$deps/fetch-$pkg.XXXXXX")
  # The Linux viewer's release where the mirror still has it, else the mirror's current one.
  if ! { [ -n "$want" ] && (cd "$work" && apt-get "${apt_opts[@]}" -qq source --download-only "$pkg=$want" > /dev/null); }; then
    (cd "$work" && apt-get "${apt_opts[@]}" -qq source --download-only "$pkg" > /dev/null)
  fi
  dsc=$(ls "$work"/*.dsc)
  rm -rf "${src:?}/$pkg"
  # Checksums were verified by apt against the signed index; the .dsc's own signature needs
  # debian-keyring, which is not installed, so dpkg-source only warns about it.
  dpkg-source -x "$dsc" "$src/$pkg" > /dev/null 2> "$work/unpack.log" || { cat "$work/unpack.log"; exit 1; }
  basename "$dsc" .dsc | sed 's/^[^_]*_//' > "$src/$pkg/.rfa-version"
  echo "fetch-viewer-sources: $pkg $(cat "$src/$pkg/.rfa-version") -> $src/$pkg"
  rm -rf "$work"
done
