#!/bin/sh
# Prints the Debian packages that provide the shared libraries BINARY loads, one per line.
# usage: runtime-packages.sh BINARY
set -eu
ldd "$1" | awk '/=> \// { print $3 }' | while read -r lib; do
  # dpkg knows a library by the path its package installed (/lib or /usr/lib, before usrmerge).
  dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null ||
    dpkg -S "/usr$lib" 2>/dev/null || { echo "no package provides $lib" >&2; exit 1; }
done | cut -d: -f1 | sort -u
