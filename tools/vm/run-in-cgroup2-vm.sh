#!/bin/bash
# run-in-cgroup2-vm.sh: run one host command as root inside a throwaway qemu VM
# that has a real cgroup v2 hierarchy (+memory +pids +cpu delegated from the root).
#
# Why: CI containers (and this host) cannot give tests a writable cgroup v2 tree,
# so cgroup limits, OOM kills, user namespaces and overlayfs are tested in a VM
# that boots the host's own Debian kernel and sees the host's / read-only over 9p.
# Host-built binaries therefore run unchanged; nothing is copied into the guest.
#
# Usage: run-in-cgroup2-vm.sh [--timeout SECONDS] [--memory MB] -- COMMAND [ARG...]
#
# Exit status: COMMAND's status; 124 on timeout; 125 if the VM could not be set
# up or did not report a status (missing tools, boot failure, guest crash).
#
# Environment:
#   SBX_VM_CACHE   initramfs cache dir (default /var/cache/sbx/vm)
#   SBX_VM_SMP     guest CPUs (default: min(nproc, 4))
#   SBX_VM_DEBUG=1 show kernel messages and the guest init's steps
#   GTEST_*, SBX_* variables of the caller are passed to COMMAND.
set -euo pipefail

PROG=${0##*/}
die() { echo "$PROG: $*" >&2; exit 125; }
usage() {
    echo "usage: $PROG [--timeout SECONDS] [--memory MB] -- COMMAND [ARG...]" >&2
    exit 125
}

TIMEOUT=600
MEMORY=1024 # MB; a GoogleTest binary that starts python3 sandboxes needs ~1 GB
while [ $# -gt 0 ]; do
    case $1 in
        --timeout) [ $# -ge 2 ] || usage; TIMEOUT=$2; shift 2 ;;
        --timeout=*) TIMEOUT=${1#*=}; shift ;;
        --memory) [ $# -ge 2 ] || usage; MEMORY=$2; shift 2 ;;
        --memory=*) MEMORY=${1#*=}; shift ;;
        --) shift; break ;;
        -h|--help) usage ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || usage
[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive integer (seconds)"
[[ $MEMORY =~ ^[1-9][0-9]*$ ]] || die "--memory must be a positive integer (MB)"

SMP=${SBX_VM_SMP:-$(n=$(nproc 2>/dev/null || echo 2); echo $((n > 4 ? 4 : n)))}
DEBUG=${SBX_VM_DEBUG:-0}

# ---------------------------------------------------------------- prerequisites
# Missing tools are reported, never installed: this script may run on a developer
# machine where installing packages is not its business.
APT_HINT="apt-get install -y --no-install-recommends qemu-system-x86 linux-image-amd64 busybox-static"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found; install it with: $APT_HINT"
for tool in modinfo cpio gzip sha256sum timeout; do
    command -v "$tool" >/dev/null || die "$tool not found (needed to build the initramfs)"
done

# The newest kernel that still has its modules (a removed kernel can leave vmlinuz behind).
KVER=
for k in $(cd /boot 2>/dev/null && ls vmlinuz-* 2>/dev/null | sed 's/^vmlinuz-//' | sort -rV); do
    if [ -d "/lib/modules/$k/kernel" ]; then KVER=$k; break; fi
done
[ -n "$KVER" ] || die "no /boot/vmlinuz-* with matching /lib/modules found; install one with: $APT_HINT"
KERNEL=/boot/vmlinuz-$KVER
[ -r "$KERNEL" ] || die "$KERNEL is not readable (run as root?)"

# Debian's busybox-static; the dynamic busybox would need its libc in the initramfs.
BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] || die "$BUSYBOX not found; install it with: $APT_HINT"
# Static means no PT_INTERP (type 3) program header. Read the ELF64 header with od
# rather than readelf, which is not always installed.
has_interp() {
    local phoff phent phnum i
    phoff=$(od -An -t u8 -j 32 -N 8 "$1" | tr -d ' ')
    phent=$(od -An -t u2 -j 54 -N 2 "$1" | tr -d ' ')
    phnum=$(od -An -t u2 -j 56 -N 2 "$1" | tr -d ' ')
    for ((i = 0; i < phnum; i++)); do
        [ "$(od -An -t u4 -j $((phoff + i * phent)) -N 4 "$1" | tr -d ' ')" = 3 ] && return 0
    done
    return 1
}
if has_interp "$BUSYBOX"; then
    die "$BUSYBOX is dynamically linked; install busybox-static: $APT_HINT"
fi

# The command runs from the host's / (read-only 9p), so it must be a host path.
CMD=$1; shift
if [[ $CMD != /* ]]; then
    CMD_PATH=$(type -P -- "$CMD") || die "command not found on the host: $CMD"
    CMD=$CMD_PATH
fi
[ -x "$CMD" ] || die "not an executable file: $CMD"
CWD=$PWD
# The guest mounts fresh tmpfs on /tmp, /var/tmp and /run. A command or working directory
# under them (a CI checkout in /tmp, say) is bound back, read-only, from the host's root
# share; the rest of those trees stays the guest's own tmpfs.
KEEP=()
for p in "$(dirname -- "$CMD")" "$CWD"; do
    case $p/ in
        /proc/*|/sys/*|/dev/*)
            die "$p is hidden inside the VM (a fresh proc/sys/dev is mounted there); use a path elsewhere" ;;
        /tmp/*|/var/tmp/*|/run/*) KEEP+=("$p") ;;
    esac
done

# ------------------------------------------------------------------ guest /init
# Generic: it knows nothing about the command. It mounts the shares, builds the
# chroot and runs the argv that the host wrote to /mnt/host/job (as `set -- ...`).
# Changing this text changes the cache key, so the initramfs is rebuilt.
read -r -d '' GUEST_INIT <<'EOF_INIT' || true
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
debug=0; grep -q 'sbx.debug=1' /proc/cmdline && debug=1
log() { [ $debug = 1 ] && echo "[init $(cut -d' ' -f1 /proc/uptime)] $*"; return 0; }
fail() { echo "sbx-vm init: $*"; poweroff -f; }
# Keep kernel chatter (e.g. OOM-kill reports) out of the command's output.
[ $debug = 1 ] || echo 1 > /proc/sys/kernel/printk
# The console is a tty; without this every \n of the command would become \r\n.
stty -onlcr 2>/dev/null

for m in $(cat /lib/modules/order); do
    insmod /lib/modules/$m.ko || echo "sbx-vm init: insmod $m failed"
done
log "modules loaded"

mount -t cgroup2 none /sys/fs/cgroup || fail "cannot mount cgroup2"
echo "+memory +pids +cpu" > /sys/fs/cgroup/cgroup.subtree_control || fail "cannot enable cgroup controllers"
hostname sbx-vm
ip link set lo up 2>/dev/null

# 9p shares: hostroot = host / read-only, host = per-run read-write directory.
# multidevs=remap (host side) and cache=loose: the host root does not change during a run.
for t in /sys/bus/virtio/drivers/9pnet_virtio/virtio*/mount_tag; do
    [ -f "$t" ] || continue
    tag=$(tr -d '\0' < "$t")
    case $tag in
        hostroot) mkdir -p /mnt/hostroot
                  mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288,cache=loose,ro hostroot /mnt/hostroot ;;
        host)     mkdir -p /mnt/host
                  mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 host /mnt/host ;;
    esac
done
grep -q ' /mnt/host ' /proc/mounts || fail "9p share 'host' not mounted"
grep -q ' /mnt/hostroot ' /proc/mounts || fail "9p share 'hostroot' not mounted"
log "shares mounted"

# Fresh kernel filesystems in the chroot; the writable places are tmpfs.
R=/mnt/hostroot
mount -t proc proc $R/proc || fail "mount $R/proc"
mount -t sysfs sys $R/sys || fail "mount $R/sys"
mount -t cgroup2 none $R/sys/fs/cgroup || fail "mount $R/sys/fs/cgroup"
mount -t devtmpfs dev $R/dev || fail "mount $R/dev"
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts $R/dev/pts
mount -t tmpfs -o mode=1777 shm $R/dev/shm
[ -f /mnt/host/job ] || fail "no job file"
. /mnt/host/job
# KEEP (from the job file): host paths under /tmp, /var/tmp or /run the job needs; a 9p tag
# mounts only once, so they are bound aside now and bound back over the tmpfs below.
i=0
for p in $KEEP; do
    mkdir -p "/mnt/keep/$i" && mount --bind "$R$p" "/mnt/keep/$i" || fail "stash $p"
    i=$((i + 1))
done
for d in tmp var/tmp; do mount -t tmpfs -o mode=1777 tmp $R/$d || fail "mount $R/$d"; done
mount -t tmpfs -o mode=0755 run $R/run || fail "mount $R/run"
log "chroot ready, running job"

# Host paths under the tmpfs mounts that the job needs, stashed before the tmpfs covered them.
i=0
for p in $KEEP; do
    mkdir -p "$R$p" && mount --bind "/mnt/keep/$i" "$R$p" || fail "bind $p"
    i=$((i + 1))
done
# Not a plain chroot: unshare(CLONE_NEWUSER) fails with EPERM for a chrooted
# process (root differs from its mount namespace's root). So, in a private
# mount namespace, move the host root on top of / and chroot into it, as
# switch_root does; / then *is* the namespace root. PID 1 keeps its own view
# (initramfs, /mnt/host) to write the status and power off.
# Output goes to files on the rw share, which the host streams with tail -f:
# the emulated serial port manages only ~100 KB/s and would merge the streams.
unshare -m --propagation private sh -c 'cd /mnt/hostroot && mount --move . / && exec chroot . "$@"' sbx-vm "$@" \
    < /dev/null > /mnt/host/stdout 2> /mnt/host/stderr
rc=$?
log "job exited with $rc"
echo $rc > /mnt/host/run.rc
sync
umount /mnt/host
# Also silence the kernel's own "reboot: Power down" line.
[ $debug = 1 ] || echo 0 > /proc/sys/kernel/printk
poweroff -f
EOF_INIT

# -------------------------------------------------------- initramfs (cached)
# Modules in dependency order. The list of wanted modules is resolved through
# modinfo's "depends" so another kernel version with different deps still works.
WANTED_MODS="virtio_pci 9pnet_virtio 9p overlay squashfs loop"
MODS=()
add_mod() {
    local m=$1 d
    for x in "${MODS[@]}"; do [ "$x" = "$m" ] && return 0; done
    for d in $(modinfo -k "$KVER" -F depends "$m" | tr ',' ' '); do add_mod "$d"; done
    MODS+=("$m")
}
for m in $WANTED_MODS; do
    modinfo -k "$KVER" -n "$m" >/dev/null 2>&1 || die "kernel module $m not found for $KVER"
    add_mod "$m"
done

CACHE=${SBX_VM_CACHE:-/var/cache/sbx/vm}
mkdir -p "$CACHE" 2>/dev/null && [ -w "$CACHE" ] ||
    die "cache dir $CACHE is not writable; set SBX_VM_CACHE to a writable directory"
# Key: everything that goes into the image.
KEY=$( { echo "v1 $KVER ${MODS[*]}"; printf '%s' "$GUEST_INIT"; sha256sum "$BUSYBOX";
         for m in "${MODS[@]}"; do sha256sum "$(modinfo -k "$KVER" -n "$m")"; done; } |
       sha256sum | cut -c1-16)
INITRD=$CACHE/initramfs-$KVER-$KEY.cpio.gz

build_initramfs() {
    local root m src
    root=$(mktemp -d "$CACHE/build.XXXXXX")
    mkdir -p "$root"/{bin,dev,proc,sys,tmp,mnt,lib/modules}
    cp "$BUSYBOX" "$root/bin/busybox"
    for m in "${MODS[@]}"; do
        src=$(modinfo -k "$KVER" -n "$m")
        # busybox insmod takes plain .ko files; newer kernels may ship them compressed.
        case $src in
            *.ko.xz)  xz -dc "$src" > "$root/lib/modules/$m.ko" ;;
            *.ko.zst) zstd -qdc "$src" > "$root/lib/modules/$m.ko" ;;
            *.ko.gz)  gzip -dc "$src" > "$root/lib/modules/$m.ko" ;;
            *)        cp "$src" "$root/lib/modules/$m.ko" ;;
        esac
    done
    echo "${MODS[*]}" > "$root/lib/modules/order"
    printf '%s\n' "$GUEST_INIT" > "$root/init"
    chmod 755 "$root/init"
    (cd "$root" && find . | cpio -o -H newc --quiet -R 0:0 | gzip -1) > "$root.cpio.gz"
    rm -rf "$root"
    mv -f "$root.cpio.gz" "$INITRD" # atomic: concurrent runs never see half a file
    # Drop images built for other kernels or older init scripts.
    find "$CACHE" -maxdepth 1 -name 'initramfs-*.cpio.gz' ! -path "$INITRD" -delete
}
if [ ! -s "$INITRD" ]; then
    echo "$PROG: building initramfs $INITRD" >&2
    build_initramfs
fi

# ------------------------------------------- uncompressed kernel (cached, PVH)
# Debian's bzImage is xz-compressed, and decompressing it under TCG costs 5-12 s
# per boot. The kernel has CONFIG_PVH=y, so qemu can start the uncompressed ELF
# vmlinux directly (PVH entry). Extract it once, like scripts/extract-vmlinux.
extract_vmlinux() { # BZIMAGE OUT: 0 if OUT is now an ELF kernel
    local tool magic off
    for spec in "xz:"$'\xfd''7zXZ' "zstd:"$'\x28\xb5\x2f\xfd' "gzip:"$'\x1f\x8b\x08'; do
        tool=${spec%%:*}; magic=${spec#*:}
        command -v "$tool" >/dev/null || continue
        for off in $(LC_ALL=C grep -abo "$magic" "$1" | cut -d: -f1); do
            # Trailing bytes after the stream make the tool fail; the output is still whole.
            tail -c +$((off + 1)) "$1" | "$tool" -dc > "$2" 2>/dev/null || true
            [ "$(head -c 4 "$2")" = $'\x7fELF' ] && return 0
        done
    done
    rm -f "$2"
    return 1
}
BOOT_KERNEL=$KERNEL
if [ "${SBX_VM_NO_PVH:-0}" != 1 ] && grep -q '^CONFIG_PVH=y' "/boot/config-$KVER" 2>/dev/null; then
    VMLINUX=$CACHE/vmlinux-$KVER-$(sha256sum "$KERNEL" | cut -c1-16)
    if [ ! -s "$VMLINUX" ]; then
        echo "$PROG: extracting $VMLINUX" >&2
        tmp=$(mktemp "$CACHE/vmlinux.XXXXXX")
        if extract_vmlinux "$KERNEL" "$tmp"; then
            chmod 644 "$tmp"
            mv -f "$tmp" "$VMLINUX"
            find "$CACHE" -maxdepth 1 -name 'vmlinux-*' ! -path "$VMLINUX" -delete
        else
            rm -f "$tmp"
            echo "$PROG: could not extract vmlinux; booting the compressed kernel (slower)" >&2
        fi
    fi
    [ -s "$VMLINUX" ] && BOOT_KERNEL=$VMLINUX
fi

# ------------------------------------------------------------------ per-run
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sbx-vm.XXXXXX")
QEMU_PID=
TAIL_PIDS=()
cleanup() {
    # Never leave qemu behind: it is wrapped in `timeout`, which forwards TERM.
    if [ -n "$QEMU_PID" ] && kill -0 "$QEMU_PID" 2>/dev/null; then
        kill -TERM "$QEMU_PID" 2>/dev/null || true
        wait "$QEMU_PID" 2>/dev/null || true
    fi
    for p in "${TAIL_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
mkdir "$WORK/share"

# POSIX single quoting: the job file is read by busybox sh, which knows no $'...'.
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
{
    printf 'KEEP=%s\n' "$(q "${KEEP[*]}")"
    printf 'set --'
    # env -i: a clean, predictable environment; the root share is read-only, so
    # everything that writes is pointed at tmpfs.
    for a in /usr/bin/env -i \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/tmp TMPDIR=/tmp LANG=C.UTF-8 TERM=dumb; do printf ' %s' "$(q "$a")"; done
    while IFS= read -r -d '' kv; do
        case $kv in GTEST_*=*|SBX_*=*) printf ' %s' "$(q "$kv")" ;; esac
    done < <(env -0)
    printf ' %s' "$(q SBX_IN_CGROUP2_VM=1)"
    # cd first (in the chroot, the guest's busybox is not there; use host sh).
    printf ' %s' /bin/sh -c "$(q 'cd -- "$1" || exit 125; shift; exec "$@"')" sbx-vm "$(q "$CWD")" "$(q "$CMD")"
    for a in "$@"; do printf ' %s' "$(q "$a")"; done
    printf '\n'
} > "$WORK/share/job"

APPEND="console=ttyS0 panic=-1"
if [ "$DEBUG" = 1 ]; then APPEND+=" sbx.debug=1"; else APPEND+=" quiet loglevel=1"; fi

# TCG, not KVM: /dev/kvm on these hosts is PVM, which cannot run a stock Debian
# kernel (see tools/vm/README.md). The serial console (kernel and init messages only) goes to our stderr.
# setpriv --pdeathsig, twice: if this script is SIGKILLed (no trap runs),
# `timeout` dies with it, and qemu dies with `timeout`.
QEMU=(qemu-system-x86_64 -accel tcg -cpu max -smp "$SMP" -m "$MEMORY"
    -nodefaults -no-user-config -display none -nic none -no-reboot
    -chardev stdio,id=con,signal=off -serial chardev:con
    -kernel "$BOOT_KERNEL" -initrd "$INITRD" -append "$APPEND"
    -virtfs "local,path=$WORK/share,mount_tag=host,security_model=none,id=host"
    -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap,id=hostroot")
PDEATH=()
command -v setpriv >/dev/null && PDEATH=(setpriv --pdeathsig KILL --)

T0=$(date +%s.%N)
: > "$WORK/share/stdout"
: > "$WORK/share/stderr"
"${PDEATH[@]}" timeout --kill-after=10 "$TIMEOUT" "${PDEATH[@]}" "${QEMU[@]}" < /dev/null >&2 &
QEMU_PID=$!
# Stream the command's output as the guest writes it; --pid makes tail do a
# last read and exit once qemu is gone.
tail -c +1 -f --pid="$QEMU_PID" "$WORK/share/stdout" &
TAIL_PIDS+=($!)
tail -c +1 -f --pid="$QEMU_PID" "$WORK/share/stderr" >&2 &
TAIL_PIDS+=($!)
set +e
wait "$QEMU_PID"
QRC=$?
wait "${TAIL_PIDS[@]}"
set -e
QEMU_PID=
TAIL_PIDS=()
T1=$(date +%s.%N)
[ "$DEBUG" = 1 ] && awk -v a="$T0" -v b="$T1" -v p="$PROG" 'BEGIN { printf "%s: qemu ran %.1f s\n", p, b - a }' >&2

if [ -s "$WORK/share/run.rc" ]; then
    exit "$(cat "$WORK/share/run.rc")"
fi
if [ "$QRC" = 124 ] || [ "$QRC" = 137 ]; then
    echo "$PROG: timed out after $TIMEOUT s; qemu killed" >&2
    exit 124
fi
echo "$PROG: the VM exited (qemu status $QRC) without reporting the command's status; rerun with SBX_VM_DEBUG=1 to see the boot log" >&2
exit 125
