/// MPI-1 functions the MPI-5 standard ABI no longer declares, and MPICH's
/// Fortran conversions of file handles and statuses (also `mpi_f08`'s), which it replaces
/// with `MPI_Abi_get_fortran_info` and the `_toint` functions: the MPICH
/// entry layer has them, the standard one does not. (Shared with
/// `build.rs`, which generates the standard layer.)
pub const NOT_IN_STANDARD_ABI: &[&str] = &[
    "MPI_Errhandler_create",
    "MPI_Errhandler_get",
    "MPI_Errhandler_set",
    "MPI_File_c2f",
    "MPI_File_f2c",
    "MPI_Status_c2f",
    "MPI_Status_f2c",
    "MPI_Status_f082c",
    "MPI_Status_c2f08",
    "MPI_Status_f082f",
    "MPI_Status_f2f08",
];
