"""The programs of the few container images whose whole contents are known.

Volcano's e2e specs run `busybox` and `nginx:*-alpine`: both are a BusyBox userland, where a
command that is neither a shell builtin nor an applet is "not found" (exit 127). For these
images the simulated kubelet can fail such a command as a real node would. For any other image
nothing is known, and a program it does not understand runs until the pod is deleted.
"""

from __future__ import annotations

# Shell builtins of BusyBox's ash, and its applets in the busybox image and Alpine's build.
BUSYBOX = frozenset("""
    . : [ [[ alias bg break cd command continue eval exec exit export fg getopts hash jobs let local
    read readonly return set shift source times trap type ulimit umask unalias unset wait
    acpid add-shell addgroup adduser adjtimex arch arp arping ash awk base32 base64 basename bc beep
    blkdiscard blkid blockdev brctl bunzip2 bzcat bzip2 cal cat chattr chgrp chmod chown chpasswd chpst
    chroot chrt chvt cksum clear cmp comm conspy cp cpio crond crontab cryptpw cttyhack cut date dc dd
    deallocvt delgroup deluser depmod devmem df dhcprelay diff dirname dmesg dnsd dnsdomainname dos2unix
    du dumpkmap dumpleases echo ed egrep eject env envdir envuidgid ether-wake expand expr factor
    fakeidentd fallocate false fatattr fbset fbsplash fdflush fdformat fdisk fgconsole fgrep find findfs
    flock fold free freeramdisk fsck fsfreeze fstrim fsync ftpd ftpget ftpput fuser getopt getty grep
    groups gunzip gzip halt hd hdparm head hexdump hexedit hostid hostname httpd hush hwclock i2cdetect
    i2cdump i2cget i2cset i2ctransfer id ifconfig ifdown ifenslave ifplugd ifup inetd init insmod install
    ionice iostat ip ipaddr ipcalc ipcrm ipcs iplink ipneigh iproute iprule iptunnel kbd_mode kill killall
    killall5 klogd last less link linux32 linux64 linuxrc ln loadfont loadkmap logger login logname
    logread losetup lpd lpq lpr ls lsattr lsmod lsof lspci lsscsi lsusb lzcat lzma lzop lzopcat makedevs
    makemime man md5sum mdev mesg microcom mim mkdir mkdosfs mke2fs mkfifo mkfs.ext2 mkfs.minix
    mkfs.vfat mknod mkpasswd mkswap mktemp modinfo modprobe more mount mountpoint mpstat mt mv nameif
    nanddump nandwrite nbd-client nc netstat nice nl nmeter nohup nologin nproc nsenter nslookup ntpd
    nuke od openvt partprobe passwd paste patch pgrep pidof ping ping6 pipe_progress pivot_root pkill
    pmap popmaildir poweroff powertop printenv printf ps pscan pstree pwd pwdx raidautorun rdate rdev
    readahead readlink readprofile realpath reboot reformime remove-shell renice reset resize resume rev
    rfkill rm rmdir rmmod route rpm rpm2cpio rtcwake run-init run-parts runlevel runsv runsvdir rx
    script scriptreplay sed sendmail seq setarch setconsole setfattr setfont setkeycodes setlogcons
    setpriv setserial setsid setuidgid sh sha1sum sha256sum sha3sum sha512sum showkey shred shuf
    slattach sleep smemcap softlimit sort split ssl_client start-stop-daemon stat strings stty su sulogin
    sum sv svc svlogd svok swapoff swapon switch_root sync sysctl syslogd tac tail tar taskset tc tcpsvd
    tee telnet telnetd test tftp tftpd time timeout top touch tr traceroute traceroute6 tree true
    truncate ts tsort tty ttysize tunctl ubiattach ubidetach ubimkvol ubirename ubirmvol ubirsvol
    ubiupdatevol udhcpc udhcpc6 udhcpd udpsvd uevent umount uname uncompress unexpand uniq unix2dos
    unlink unlzma unlzop unshare unxz unzip uptime users usleep uudecode uuencode vconfig vi vlock volname
    w wall watch watchdog wc wget which who whoami whois xargs xxd xz xzcat yes zcat zcip
""".split())
# What Alpine adds to BusyBox, and what the nginx Alpine image adds to Alpine.
ALPINE = BUSYBOX | {"apk", "getconf", "getent", "iconv", "ldconfig", "ldd", "scanelf", "ssl_client"}
NGINX_ALPINE = ALPINE | {"nginx", "nginx-debug", "curl", "envsubst", "gettext", "docker-entrypoint.sh", "tini"}
# Where those programs live: a path elsewhere names a file the image does not have.
BIN_DIRS = frozenset({"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"})


def known_programs(image: str | None) -> frozenset[str] | None:
    """Every command `image` can run, or None where the image's contents are unknown."""
    if not image:
        return None
    name, _, tag = image.partition("@")[0].rsplit("/", 1)[-1].partition(":")
    if name == "busybox":
        return BUSYBOX
    if name == "alpine":
        return ALPINE
    if name == "nginx" and "alpine" in tag:
        return NGINX_ALPINE
    return None


def on_path(word: str, programs: frozenset[str]) -> bool:
    """Whether the command word (a name looked up on PATH, or a path) names one of `programs`."""
    if "/" not in word:
        return word in programs
    return is_file(word, programs)


def is_file(path: str, programs: frozenset[str]) -> bool:
    """Whether `path` (a script's or program's file) exists in an image with these programs."""
    directory, _, base = path.rpartition("/")
    if path == "/docker-entrypoint.sh":  # the nginx image's entrypoint script, at the root
        return base in programs
    return directory in BIN_DIRS and base in programs
