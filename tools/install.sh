#!/usr/bin/env bash
# Build Tessel's MPI library and lay it out as an MPI installation:
#   PREFIX/bin/mpicc, PREFIX/bin/mpiexec, PREFIX/bin/tessel-info, PREFIX/bin/tessel-dynres,
#   PREFIX/include/mpi.h (and mpidynres*.h),
#   PREFIX/lib/libmpi.so.12 (and libmpi.so, libmpich.so.12), PREFIX/lib/pkgconfig/mpi.pc,
#   and for the MPI-5 standard ABI PREFIX/bin/mpicc_abi, PREFIX/include/abi/mpi.h,
#   PREFIX/lib/libmpi_abi.so.1 (and libmpi_abi.so), PREFIX/lib/pkgconfig/mpi_abi.pc,
#   PREFIX/lib/tessel/libtessel_plugin_{ucx,ofi,verbs}.so (network plugins, found
#   there by the library without any setting)
# Usage: tools/install.sh [PREFIX]   (default: target/tessel)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-target/tessel}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)

cargo build --release --locked -p mpi-shim --lib --bin tessel-mpi-header
# The same crate built for the standard ABI (build.rs reads TESSEL_MPI_ABI),
# in a target directory of its own so that neither build undoes the other.
TESSEL_MPI_ABI=standard CARGO_TARGET_DIR=target/abi-build cargo build --release --locked -p mpi-shim --lib
cargo build --release --locked -p tools --bin mpiexec --bin tessel-info --bin tessel-dynres
plugins=(ucx ofi verbs)
cargo build --release --locked "${plugins[@]/#/--package=tessel-plugin-}"
mkdir -p "$prefix/bin" "$prefix/include/abi" "$prefix/lib/pkgconfig" "$prefix/lib/tessel"
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
install -m 0755 target/release/tessel-dynres "$prefix/bin/tessel-dynres"
target/release/tessel-mpi-header > "$prefix/include/mpi.h"
install -m 0755 target/abi-build/release/libmpi.so "$prefix/lib/libmpi_abi.so.1"
ln -sf libmpi_abi.so.1 "$prefix/lib/libmpi_abi.so"
target/release/tessel-mpi-header --abi standard > "$prefix/include/abi/mpi.h"
# libmpidynres's names for the process-set calls, for both ABIs.
for h in mpidynres.h mpidynres_sim.h; do
    install -m 0644 "mpi-shim/include/$h" "$prefix/include/$h"
    install -m 0644 "mpi-shim/include/$h" "$prefix/include/abi/$h"
done

# mpicc (MPICH ABI) and mpicc_abi (standard ABI): the same wrapper with
# another header directory and library.
compiler_wrapper() { # NAME INCLUDE-SUBDIR LIBRARY ABI-DESCRIPTION
    cat > "$prefix/bin/$1" <<WRAPPER
#!/usr/bin/env bash
# Compile and link C programs against Tessel's MPI library, $4.
# Any C compiler option works; set TESSEL_CC to use another compiler than
# cc, and -show to print the command instead of running it.
prefix=\$(cd "\$(dirname "\$(readlink -f "\$0")")/.." && pwd)
cc=\${TESSEL_CC:-cc}
link=(-L"\$prefix/lib" -Wl,-rpath,"\$prefix/lib" -l$3)
show=
args=()
for a in "\$@"; do
    case \$a in
        -c|-E|-S|-M|-MM) link=() ;;
    esac
    if [ "\$a" = -show ]; then show=1; else args+=("\$a"); fi
done
cmd=("\$cc" -I"\$prefix/include$2" "\${args[@]}" "\${link[@]}")
if [ -n "\$show" ]; then echo "\${cmd[*]}"; else exec "\${cmd[@]}"; fi
WRAPPER
    chmod 0755 "$prefix/bin/$1"
}
compiler_wrapper mpicc "" mpi "the MPICH ABI (libmpi.so.12)"
compiler_wrapper mpicc_abi /abi mpi_abi "the MPI-5 standard ABI (libmpi_abi.so.1)"

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
cat > "$prefix/lib/pkgconfig/mpi_abi.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include/abi

Name: mpi_abi
Description: Tessel MPI (MPI-5 standard ABI, libmpi_abi.so.1)
Version: $(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lmpi_abi
PC
echo "installed Tessel MPI in $prefix"
