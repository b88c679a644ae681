#!/usr/bin/env bash
# A Debian bookworm base image (python3.11, venv, pip, ca-certificates) built with mmdebstrap from this machine's
# Debian mirror, for machines that reach no container registry: scripts/images.sh builds on it.
#   usage: debian_base.sh CLI IMAGE_REF TARBALL
# minbase + merged-usr (without the hook mmdebstrap 1.3.5 installs usrmerge and a full perl: 202 MB instead of
# 153 MB); apt inside derived images keeps no caches or .deb files (Docker's debian images do the same).
set -euo pipefail
cli=$1 ref=$2 out=$3
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
mirror=${mirror:-http://deb.debian.org/debian}
security=${mirror%/debian}/debian-security
mkdir -p "$(dirname "$out")"
log="$out.log"
if ! mmdebstrap --variant=minbase --quiet \
  --include=python3,python3-venv,python3-pip,ca-certificates \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --customize-hook='cat > "$1/etc/apt/apt.conf.d/docker-clean" <<"CONF"
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CONF
rm -f "$1"/var/cache/apt/*.bin' \
  --aptopt='Acquire::Check-Valid-Until "false"' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
  bookworm "$out" \
  "deb $mirror bookworm main" "deb $mirror bookworm-updates main" "deb $security bookworm-security main" \
  >"$log" 2>&1; then
  tail -n 30 "$log"
  echo "debian_base: mmdebstrap failed (log: $log)" >&2
  exit 1
fi
"$cli" import --change 'CMD ["python3"]' --change 'ENV LANG=C.UTF-8' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' "$out" "$ref" >/dev/null
rm -f "$out"
