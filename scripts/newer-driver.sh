#!/usr/bin/env bash
# Fetches a newer software GPU than Debian 12's lavapipe 22 (scripts/install-deps.sh mesa26 runs it):
# Mesa 26's lavapipe from Debian 13's backports, with Debian 13's Vulkan loader, validation layer,
# glslang 15 and SPIR-V tools, and the Debian 13 libraries they need (41 packages, ~75 MB), unpacked
# with `dpkg -x` into .drivers/mesa26/root. Nothing is installed over the system's: programs run on
# it through Debian 13's own dynamic loader, which the launcher .drivers/mesa26/run does:
#
#   .drivers/mesa26/run build/rfa-run --list-devices
#
# What Mesa 26 runs that lavapipe 22 cannot (docs/device-profiles.md, "Drivers"): clustered subgroup
# operations (the *_sg kernels), VK_KHR_cooperative_matrix (8 x 8 x 8 fp16; the *_tile_ck kernels,
# which glslang 15 compiles and Debian 12's glslang 12 refuses) and VK_NV_cooperative_matrix2.
# The build finds .drivers/mesa26/bin/glslangValidator (RFA_GLSLANG_NEXT) and compiles the KHR
# matrix kernels with it; the tests register a second pass on the driver (CTest label newer-driver).
#
# Usage: bash scripts/newer-driver.sh [DIR]   (default .drivers/mesa26 in the repository)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(realpath -m "${1:-.drivers/mesa26}")
# The packages and the suites they come from: Mesa from trixie-backports, the rest from trixie.
SUITE_MESA=trixie-backports
PKGS=(mesa-vulkan-drivers libvulkan1 vulkan-validationlayers glslang-tools spirv-tools)
if [ -x "$dir/run" ] && [ -f "$dir/versions" ] && [ "$(cat "$dir/versions.want" 2>/dev/null)" = "${PKGS[*]}@$SUITE_MESA" ]; then
  echo "newer driver: $dir ($(head -1 "$dir/versions"))"
  exit 0
fi
rm -rf "$dir"
mkdir -p "$dir/apt/state/lists/partial" "$dir/apt/cache/archives/partial" "$dir/root" "$dir/bin"
# A private apt: its own sources, lists, cache and an empty dpkg status, so that the whole dependency
# closure is fetched and nothing on the system is read or changed.
cat > "$dir/apt/sources.list" <<'EOF'
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie-backports main
EOF
: > "$dir/apt/status"
APT=(-o "Dir::State=$dir/apt/state" -o "Dir::State::status=$dir/apt/status" -o "Dir::Cache=$dir/apt/cache"
     -o "Dir::Etc::SourceList=$dir/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
     -o Debug::NoLocking=1 -o APT::Install-Recommends=0 -o APT::Get::List-Cleanup=0)
apt-get "${APT[@]}" update -qq
apt-get "${APT[@]}" install -y -qq --download-only -t "$SUITE_MESA" "${PKGS[@]}" > "$dir/apt/download.log"
for deb in "$dir"/apt/cache/archives/*.deb; do dpkg -x "$deb" "$dir/root"; done
lib="$dir/root/usr/lib/x86_64-linux-gnu"
[ -f "$lib/libvulkan_lvp.so" ] || { echo "newer-driver.sh: no libvulkan_lvp.so in the unpacked packages" >&2; exit 1; }
# The ICD file with the driver's absolute path (the packaged one names the library alone).
sed "s#\"libvulkan_lvp.so\"#\"$lib/libvulkan_lvp.so\"#" "$dir/root/usr/share/vulkan/icd.d/lvp_icd.json" > "$dir/lvp_icd.json"
# The launcher: Debian 13's loader, its libraries, lavapipe alone and its validation layer alone.
cat > "$dir/run" <<EOF
#!/bin/sh
# Runs PROGRAM [ARGS] on Mesa 26's lavapipe (scripts/newer-driver.sh wrote this).
export VK_ICD_FILENAMES="$dir/lvp_icd.json" VK_DRIVER_FILES="$dir/lvp_icd.json"
export VK_LAYER_PATH="$dir/root/usr/share/vulkan/explicit_layer.d"
prog="\$1"; shift
case "\$prog" in */*) ;; *) prog=\$(command -v "\$prog") ;; esac
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "\$prog" "\$@"
EOF
chmod +x "$dir/run"
for tool in glslangValidator spirv-val spirv-dis spirv-opt; do
  printf '#!/bin/sh\nexec "%s/run" "%s/root/usr/bin/%s" "$@"\n' "$dir" "$dir" "$tool" > "$dir/bin/$tool"
  chmod +x "$dir/bin/$tool"
done
# What was fetched, for the logs: Mesa's version (from its package's name) and glslang's.
mesa_deb=$(basename "$(ls "$dir"/apt/cache/archives/mesa-vulkan-drivers_*.deb)")
rm -rf "$dir/apt/cache/archives"  # the unpacked tree is what is used
{
  echo "mesa-vulkan-drivers $(echo "$mesa_deb" | cut -d_ -f2 | sed 's/%3a/:/')"
  "$dir/bin/glslangValidator" --version | head -1
} > "$dir/versions"
echo "${PKGS[*]}@$SUITE_MESA" > "$dir/versions.want"
echo "newer driver: $dir ($(tr '\n' ' ' < "$dir/versions"))"
