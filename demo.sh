#!/bin/sh
# Builds and installs MPICH with the partitioned engine into _install/ (PREFIX= overrides),
# then runs the main job: a 2-rank partitioned transfer demo. See README, "Quick start".
set -e
top=$(cd "$(dirname "$0")" && pwd)
PREFIX=${PREFIX:-$top/_install}
export PREFIX
"$top/maint/build.sh"
make -C "$top/examples" MPICXX="$PREFIX/bin/mpicxx" >/dev/null
exec "$PREFIX/bin/mpiexec" -n 2 "$top/examples/part_demo" "$@"
