#!/bin/sh
# tests/device/pack.sh DIR BINARY...: what travels to a GPU machine for the
# device check (run.sh; docs/gpu.md), in DIR, an ignored folder of the
# repository: the binaries in DIR/bin (debug info kept for gpu_check, whose
# kernels compute-sanitizer names), the Debian libraries they link but
# glibc in DIR/lib, glibc itself in DIR/glibc (run.sh uses it through its
# own loader where the machine's glibc is older than this one), each
# library from its Debian package (apt-get download, then dpkg-deb), or copied
# from this machine where the package cannot be downloaded (the same
# files). The packages are kept in DEVICE_DEBS (default build/device-debs)
# for the next pack. DIR/PACK.txt says what is there; more than 64 MiB
# fails.
set -eu
dir=$1
shift
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/lib" "$dir/glibc"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
debs=${DEVICE_DEBS:-build/device-debs}
mkdir -p "$debs"
debs=$(cd "$debs" && pwd)

for b in "$@"; do
	case $b in
	*/gpu_check) cp "$b" "$dir/bin/" ;;
	*) strip --strip-debug -o "$dir/bin/$(basename "$b")" "$b" ;;
	esac
done

# glibc's own libraries: the machine's unless run.sh finds it older
is_glibc() {
	case $1 in
	libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | \
	ld-linux-x86-64.so.*) return 0 ;;
	esac
	return 1
}

# The Debian package of the library at $1, as installed here, into $deb
# (downloaded once into $debs). @return 1 when it cannot be had (no
# network, a version the archive no longer has).
find_deb() {
	path=$(readlink -f "$1")
	pkg=$(dpkg -S "$path" 2>/dev/null || dpkg -S "/usr$path" 2>/dev/null ||
		dpkg -S "${path#/usr}" 2>/dev/null) || return 1
	pkg=${pkg%%:*}
	ver=$(dpkg-query -W -f '${Version}' "$pkg") || return 1
	file=$(echo "${pkg}_${ver}_" | sed 's/:/%3a/')
	deb=$(ls "$debs/$file"*.deb 2>/dev/null | head -1)
	if [ -z "$deb" ]; then
		# asked once: a version the archive lacks is noted, not asked again
		grep -qxF "$pkg=$ver" "$debs/missing" 2>/dev/null && return 1
		(cd "$debs" && apt-get download -q "$pkg=$ver" >/dev/null 2>&1) ||
			{ echo "$pkg=$ver" >>"$debs/missing"; return 1; }
		deb=$(ls "$debs/$file"*.deb 2>/dev/null | head -1)
		[ -n "$deb" ] || return 1
	fi
	echo "$pkg" >>"$work/packages"
}

# The file of soname $2 (found by ldd at $1) into folder $3: from its
# package (dpkg-deb, the file alone), else the machine's own.
put() {
	base=$(basename "$(readlink -f "$1")")
	if find_deb "$1" && dpkg-deb --fsys-tarfile "$deb" |
		tar -xO --wildcards "*/$base" >"$3/$2" 2>/dev/null && [ -s "$3/$2" ]; then
		return 0
	fi
	echo "$1" >>"$work/copied"
	cp -L "$1" "$3/$2"
}

ldd "$dir"/bin/* 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 } $1 ~ /^\/.*ld-linux/ { print "ld-linux-x86-64.so.2", $1 }' |
	sort -u >"$work/libs"
while read -r name path; do
	if is_glibc "$name"; then put "$path" "$name" "$dir/glibc"; else put "$path" "$name" "$dir/lib"; fi
done <"$work/libs"

chmod 0755 "$dir"/lib/* "$dir"/glibc/* "$dir"/bin/*
glibc=$(getconf GNU_LIBC_VERSION | awk '{ print $2 }')
kib=$(du -sk "$dir" | awk '{ print $1 }')
{
	echo "dsview device pack: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (uncommitted changes)'), $(date -u +%FT%TZ)"
	echo "built on: $(. /etc/os-release && echo "$PRETTY_NAME"), glibc $glibc, $(nvcc --version 2>/dev/null | tail -1 || echo 'no nvcc')"
	echo "glibc: $glibc"
	echo "size: $((kib / 1024)) MiB"
	echo "packages (apt-get download, dpkg-deb): $(sort -u "$work/packages" 2>/dev/null | tr '\n' ' ')"
	echo "copied from this machine (no package to be had): $([ -e "$work/copied" ] && tr '\n' ' ' <"$work/copied")"
	(cd "$dir" && find bin lib glibc -type f | sort | xargs ls -l | awk '{ print "  " $5, $9 }')
} >"$dir/PACK.txt"
if [ "$kib" -gt $((64 * 1024)) ]; then
	echo "pack.sh: $dir is $((kib / 1024)) MiB: more than the 64 MiB that travel" >&2
	exit 1
fi
echo "pack.sh: $dir, $((kib / 1024)) MiB ($dir/PACK.txt)"
