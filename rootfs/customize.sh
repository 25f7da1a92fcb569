#!/bin/bash
# The post-install step of the sbx image: sandbox user, matplotlib defaults, cleanup, and the
# normalisation that makes the root pass `sbx image verify` (no setuid, no devices, no
# group/other-writable files, everything owned by root).
#
# Usage: customize.sh ROOT RECIPE [all|normalize]
#   all        run inside mmdebstrap's --customize-hook (the default)
#   normalize  only the normalisation; build-image.sh repeats it after mmdebstrap has
#              unmounted /dev, /proc and /sys, which a hook cannot see past
set -euo pipefail

root=$1
recipe=$2
what=${3:-all}

# The words after KEY on the first "KEY ..." line of the recipe.
recipe_get() { awk -v k="$1" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }' "$recipe"; }

add_user() {
  local name uid home shell
  read -r name uid home shell <<<"$(recipe_get user)"
  # Written directly: useradd (package passwd) is not in the essential variant.
  if ! grep -q "^$name:" "$root/etc/passwd"; then
    echo "$name:x:$uid:$uid::$home:$shell" >>"$root/etc/passwd"
    echo "$name:x:$uid:" >>"$root/etc/group"
    echo "$name:*:19000:0:99999:7:::" >>"$root/etc/shadow"
    [[ -e $root/etc/gshadow ]] && echo "$name:!::" >>"$root/etc/gshadow"
  fi
  mkdir -p "$root$home"
  find "$root$home" -mindepth 1 -delete
  chown "$uid:$uid" "$root$home"
  chmod 0755 "$root$home"
}

configure_matplotlib() {
  local backend cache rc=$root/etc/matplotlibrc
  backend=$(recipe_get matplotlib-backend)
  cache=$(recipe_get matplotlib-cache)
  if [[ -f $rc ]] && grep -Eq '^[[:space:]]*#?[[:space:]]*backend[[:space:]]*:' "$rc"; then
    sed -Ei "s/^[[:space:]]*#?[[:space:]]*backend[[:space:]]*:.*/backend: $backend/" "$rc"
  else
    echo "backend: $backend" >>"$rc"
  fi
  # Pre-build the font cache, so the first import under a fresh HOME does not rebuild it.
  chroot "$root" env -i PATH=/usr/bin:/bin HOME=/nonexistent MPLCONFIGDIR="$cache" \
    /usr/bin/python3 -c 'import matplotlib.pyplot'
  chmod -R a+rX,go-w "$root$cache"
  # matplotlib ignores a config dir it cannot write (os.access W_OK) and rebuilds the font
  # cache in a temp dir on every run. Sticky and world-writable, like /tmp, the directory is
  # writable through the sandbox's overlay while the pre-built cache file stays root's.
  chmod 1777 "$root$cache"
}

set_hostname() {
  local name
  name=$(recipe_get hostname)
  echo "$name" >"$root/etc/hostname"
  # mmdebstrap leaves /etc/hosts empty; without localhost, getaddrinfo("localhost") fails.
  grep -q '[[:space:]]localhost$' "$root/etc/hosts" 2>/dev/null ||
    printf '127.0.0.1	localhost
::1		localhost ip6-localhost ip6-loopback
' >>"$root/etc/hosts"
  grep -q "[[:space:]]$name\$" "$root/etc/hosts" 2>/dev/null ||
    printf '127.0.1.1\t%s\n' "$name" >>"$root/etc/hosts"
}

# The session driver (the executor's stateful Python sessions) lives in the image, read-only.
install_session_driver() {
  install -D -m 0644 -o 0 -g 0 "$(dirname "$recipe")/session_driver.py" \
    "$root/usr/lib/sbx/session_driver.py"
  install -D -m 0644 -o 0 -g 0 "$(dirname "$recipe")/zygote.py" "$root/usr/lib/sbx/zygote.py"
  install -D -m 0644 -o 0 -g 0 "$(dirname "$recipe")/zygote_prefault.py" \
    "$root/usr/lib/sbx/zygote_prefault.py"
}

clean() {
  rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* \
    "$root"/var/cache/debconf/*-old "$root"/var/lib/dpkg/*-old \
    "$root"/var/log/apt/* "$root"/var/log/dpkg.log "$root"/var/log/alternatives.log
  find "$root/tmp" "$root/var/tmp" -xdev -mindepth 1 -delete
}

normalize() {
  local home
  home=$(recipe_get user | awk '{print $3}')
  find "$root" -xdev ! -type l -perm /6000 -exec chmod ug-s {} +
  find "$root" -xdev \( -type b -o -type c -o -type p -o -type s \) -delete
  # Writable by group or other is allowed only for sticky directories such as /tmp.
  find "$root" -xdev ! -type l -perm /022 ! \( -type d -perm -1000 \) -exec chmod go-w {} +
  find "$root" -xdev ! -user 0 ! -path "$root$home" -exec chown -h 0 {} +
}

case $what in
  all)
    add_user
    configure_matplotlib
    set_hostname
    install_session_driver
    clean
    normalize
    ;;
  normalize) normalize ;;
  *) echo "customize.sh: unknown step '$what'" >&2; exit 2 ;;
esac
