#!/usr/bin/python3
"""Prints the directory `make install` puts the dsview package in for
PREFIX (argv[1]): a directory on this Python's own sys.path for that
prefix. Debian's Python reads /usr/lib/python3/dist-packages for /usr and
PREFIX/lib/python3.X/dist-packages for other prefixes (/usr/local);
elsewhere, the posix_prefix scheme's site-packages."""
import sys
import sysconfig

prefix = sys.argv[1].rstrip("/") or "/"
if "deb_system" in sysconfig.get_scheme_names():
    if prefix == "/usr":
        print(sysconfig.get_path("purelib", "deb_system", vars={"base": prefix}))
    else:
        print(f"{prefix}/lib/python{sys.version_info[0]}.{sys.version_info[1]}/dist-packages")
else:
    print(sysconfig.get_path("purelib", "posix_prefix", vars={"base": prefix}))
