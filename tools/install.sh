#!/usr/bin/env bash
# Build Tessel's MPI library and lay it out as an MPI installation:
#   PREFIX/bin/mpicc, PREFIX/bin/mpiexec, PREFIX/bin/tessel-info, PREFIX/include/mpi.h,
#   PREFIX/lib/libmpi.so.12 (and libmpi.so, libmpich.so.12), PREFIX/lib/pkgconfig/mpi.pc,
#   PREFIX/lib/tessel/libtessel_plugin_{ucx,ofi,verbs}.so (network plugins, found
#   there by the library without any setting)
# Usage: tools/install.sh [PREFIX]   (default: target/tessel)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-target/tessel}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)

cargo build --release --locked -p mpi-shim --lib --bin tessel-mpi-header
cargo build --release --locked -p tools --bin mpiexec --bin tessel-info
plugins=(ucx ofi verbs)
cargo build --release --locked "${plugins[@]/#/--package=tessel-plugin-}"
mkdir -p "$prefix/bin" "$prefix/include" "$prefix/lib/pkgconfig" "$prefix/lib/tessel"
for p in "${plugins[@]}"; do
    install -m 0755 "target/release/libtessel_plugin_$p.so" "$prefix/lib/tessel/"
done
install -m 0755 target/release/libmpi.so "$prefix/lib/libmpi.so.12"
ln -sf libmpi.so.12 "$prefix/lib/libmpi.so"
# Debian's and Ubuntu's MPICH name the same ABI libmpich.so.12: binaries
# built with their mpicc look for that name.
ln -sf libmpi.so.12 "$prefix/lib/libmpich.so.12"
install -m 0755 target/release/mpiexec "$prefix/bin/mpiexec"
install -m 0755 target/release/tessel-info "$prefix/bin/tessel-info"
target/release/tessel-mpi-header > "$prefix/include/mpi.h"

cat > "$prefix/bin/mpicc" <<'MPICC'
#!/usr/bin/env bash
# Compile and link C programs against Tessel's MPI library. Any C compiler
# option works; set TESSEL_CC to use another compiler than cc, and -show
# to print the command instead of running it.
prefix=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
cc=${TESSEL_CC:-cc}
link=(-L"$prefix/lib" -Wl,-rpath,"$prefix/lib" -lmpi)
show=
args=()
for a in "$@"; do
    case $a in
        -c|-E|-S|-M|-MM) link=() ;;
    esac
    if [ "$a" = -show ]; then show=1; else args+=("$a"); fi
done
cmd=("$cc" -I"$prefix/include" "${args[@]}" "${link[@]}")
if [ -n "$show" ]; then echo "${cmd[*]}"; else exec "${cmd[@]}"; fi
MPICC
chmod 0755 "$prefix/bin/mpicc"

cat > "$prefix/lib/pkgconfig/mpi.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: mpi
Description: Tessel MPI (MPICH ABI, libmpi.so.12)
Version: $(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lmpi
PC
echo "installed Tessel MPI in $prefix"
