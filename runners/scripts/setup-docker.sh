#!/usr/bin/env bash
# `coevo env setup` (and CI): make a working Docker daemon and local debian:<suite>-slim base images available on a
# machine that has only the docker CLI and no reachable container registry.
#   1. install docker.io + debootstrap (only if missing) and start dockerd (only if `docker info` fails)
#   2. build debian:<suite>-slim with debootstrap from the host's Debian mirror for each suite of
#      $COEVO_DEBIAN_SUITES (only those missing): the suites coevo's base images start from, bookworm
#      (JDK 17), bullseye (JDK 11), trixie (JDK 21 and 25) and sid (JDK 8: no other suite still has it).
# Idempotent: when everything is already up it only runs two checks and exits in a few seconds.
# Root only. dockerd is left running in the background, logging to /var/log/dockerd.log.
set -euo pipefail

SUITES=${COEVO_DEBIAN_SUITES:-bookworm bullseye trixie sid}
DOCKERD_LOG=/var/log/dockerd.log
DOCKERD_TIMEOUT=${DOCKERD_TIMEOUT:-60}
export DEBIAN_FRONTEND=noninteractive

say() { echo "[setup-docker] $*"; }
die() {
  echo "[setup-docker] ERROR: $*" >&2
  exit 1
}

[ "$(id -u)" -eq 0 ] || die "must run as root"
command -v docker >/dev/null || die "docker CLI not found"

docker_up() { timeout 10 docker info >/dev/null 2>&1; }

# --- apt helpers -------------------------------------------------------------------------------
APT_UPDATED=0
apt_update() {
  if [ "$APT_UPDATED" -eq 0 ]; then
    apt-get update -q
    APT_UPDATED=1
  fi
}
# apt_install PKG...: installs the packages, running `apt-get update` only when the package lists
# don't know a package or when the install fails (e.g. stale lists pointing at removed .debs).
apt_install() {
  local p
  for p in "$@"; do
    if ! apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [^(]'; then
      apt_update
      break
    fi
  done
  if ! apt-get install -y -q --no-install-recommends "$@"; then
    [ "$APT_UPDATED" -eq 0 ] || die "apt-get install $* failed"
    apt_update
    apt-get install -y -q --no-install-recommends "$@"
  fi
}

# --- step 1: packages + dockerd ----------------------------------------------------------------
# Chooses daemon options that work on this VM; prints them one per line.
dockerd_args() {
  # Storage driver: overlay2 if this kernel/filesystem can mount an overlay, else vfs (slow but works).
  local t
  mkdir -p /var/lib/docker
  t=$(mktemp -d /var/lib/docker/.overlay-probe.XXXXXX)
  mkdir -p "$t/l" "$t/u" "$t/w" "$t/m"
  if mount -t overlay overlay -o "lowerdir=$t/l,upperdir=$t/u,workdir=$t/w" "$t/m" 2>/dev/null; then
    umount "$t/m"
    echo --storage-driver=overlay2
  else
    echo --storage-driver=vfs
  fi
  rm -rf "$t"

  # iptables (needed for NAT so containers on the default bridge can reach the network):
  # prefer the nft backend, fall back to legacy, else run without (then use --network host).
  if iptables -t nat -L -n >/dev/null 2>&1; then
    :
  elif [ -x /usr/sbin/iptables-legacy ] && iptables-legacy -t nat -L -n >/dev/null 2>&1; then
    update-alternatives --set iptables /usr/sbin/iptables-legacy >/dev/null
    update-alternatives --set ip6tables /usr/sbin/ip6tables-legacy >/dev/null 2>&1 || true
  else
    echo --iptables=false
  fi

  # Bridge MTU = MTU of the default-route interface when that is below 1500 (eth0 is 1400 on these
  # VMs). A 1500 bridge also worked in testing (path-MTU discovery), this avoids relying on it.
  local dev mtu
  dev=$(ip route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit }}')
  if [ -n "$dev" ] && [ -r "/sys/class/net/$dev/mtu" ]; then
    mtu=$(cat "/sys/class/net/$dev/mtu")
    [ "$mtu" -ge 1500 ] || echo "--mtu=$mtu"
  fi
}

if docker_up; then
  say "dockerd: already running (skipped)"
else
  missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  if [ ${#missing[@]} -gt 0 ]; then
    apt_install "${missing[@]}"
    say "packages: installed ${missing[*]}"
  else
    say "packages: docker.io and debootstrap already installed (skipped)"
  fi

  if pgrep -x dockerd >/dev/null; then
    say "dockerd: a dockerd process exists but does not answer yet; waiting for it"
  else
    mapfile -t args < <(dockerd_args)
    say "dockerd: starting with ${args[*]:-default options} (log: $DOCKERD_LOG)"
    setsid nohup dockerd "${args[@]}" >>"$DOCKERD_LOG" 2>&1 </dev/null &
  fi
  deadline=$((SECONDS + DOCKERD_TIMEOUT))
  until docker_up; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      tail -n 30 "$DOCKERD_LOG" >&2 || true
      die "dockerd did not answer \`docker info\` within ${DOCKERD_TIMEOUT}s (see $DOCKERD_LOG)"
    fi
    if ! pgrep -x dockerd >/dev/null; then
      tail -n 30 "$DOCKERD_LOG" >&2 || true
      die "dockerd exited during startup (see $DOCKERD_LOG)"
    fi
    sleep 1
  done
  say "dockerd: started ($(docker info --format '{{.ServerVersion}}, storage {{.Driver}}'))"
fi

# --- step 2: base image ------------------------------------------------------------------------
# First URI of the host's apt sources (one-line .list or deb822 .sources) that serves suite $1.
host_mirror() {
  local suite=$1 f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    awk -v s="$suite" '
      $1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                    if ($(i + 1) == s) { print $i; exit } }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    awk -v s="$suite" '
      function flush() { if (!done && deb && uri != "" && (" " suites " ") ~ (" " s " ")) { print uri; done = 1; exit }
                         deb = 0; uri = ""; suites = "" }
      /^[ \t]*$/ { flush(); next }
      /^[ \t]*#/ { next }
      tolower($1) == "types:" { deb = ($0 ~ /[ \t]deb([ \t]|$)/) }
      tolower($1) == "uris:" { uri = $2 }
      tolower($1) == "suites:" { $1 = ""; suites = $0 }
      END { flush() }' "$f"
  done
}

# build_suite_image SUITE: debian:SUITE-slim, unless it is present.
build_suite_image() {
  local SUITE=$1 IMAGE=debian:$1-slim mirror security updates
  if docker image inspect "$IMAGE" >/dev/null 2>&1; then
    say "image $IMAGE: present (skipped)"
  else
    command -v debootstrap >/dev/null || apt_install debootstrap
    mirror=$(host_mirror "$SUITE" | head -n 1)
    mirror=${mirror:-http://deb.debian.org/debian}
    security=$(host_mirror "$SUITE-security" | head -n 1)
    security=${security:-http://deb.debian.org/debian-security}
    # sid (unstable) has no -updates or -security suite.
    updates=1
    [ "$SUITE" != sid ] || updates=
    say "image $IMAGE: building with debootstrap --variant=minbase $SUITE from $mirror"

    rootfs=$(mktemp -d /var/tmp/setup-docker-rootfs.XXXXXX)
    cleanup() {
      # debootstrap mounts proc/sys inside the target; never rm -rf through a live mount.
      awk -v r="$rootfs" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
        umount -l "$m" || true
      done
      rm -rf --one-file-system "$rootfs"
    }
    trap cleanup EXIT

    # An https mirror is fetched by the host's wget, which trusts the host bundle (incl. the proxy CA).
    if ! debootstrap --variant=minbase --components=main "$SUITE" "$rootfs" "$mirror" \
      >/var/log/setup-docker-debootstrap.log 2>&1; then
      tail -n 30 /var/log/setup-docker-debootstrap.log >&2
      [ -f "$rootfs/debootstrap/debootstrap.log" ] && tail -n 30 "$rootfs/debootstrap/debootstrap.log" >&2
      die "debootstrap failed (see /var/log/setup-docker-debootstrap.log)"
    fi

    # Make it look like the official image: same apt sources (main + updates + security) and apt
    # settings, empty apt lists/caches, no host-specific files.
    rm -f "$rootfs/etc/apt/sources.list"
    cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $SUITE${updates:+ $SUITE-updates}
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    if [ -n "$updates" ]; then
      cat >>"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF

Types: deb
URIs: $security
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    fi
    cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
    echo 'Acquire::Languages "none";' >"$rootfs/etc/apt/apt.conf.d/docker-no-languages"
    # sid's Release file is valid for a week only: a mirror that lags behind it (or one frozen in
    # time) would make every apt-get update fail. Signatures are still checked.
    [ -n "$updates" ] || echo 'Acquire::Check-Valid-Until "false";' >"$rootfs/etc/apt/apt.conf.d/docker-valid-until"
    find "$rootfs/var/lib/apt/lists" "$rootfs/var/cache/apt" -type f -delete
    rm -rf "${rootfs:?}"/dev/* "$rootfs/etc/hostname" "$rootfs/etc/resolv.conf" "$rootfs"/var/log/*.log \
      "$rootfs/debootstrap"
    : >"$rootfs/etc/resolv.conf"

    tar --numeric-owner -C "$rootfs" -c . |
      docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["bash"]' \
        - "$IMAGE" >/dev/null
    cleanup
    trap - EXIT
    say "image $IMAGE: built ($(docker image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1 / 1e6}'))"
  fi
}

for suite in $SUITES; do
  build_suite_image "$suite"
done
