/* libmpich.so.12: the name MPICH-built programs ask the dynamic loader for.
 *
 * It holds no MPI code.  It depends on libmpi.so.12 (DT_NEEDED, runpath
 * $ORIGIN), so loading it loads Cadence's one library, and every MPI_ and
 * PMPI_ symbol an MPICH-built program needs (MPICH exports them without
 * symbol versions) resolves there.  Being a real library whose SONAME is
 * libmpich.so.12, ldconfig offers it for that name when its directory is in
 * the loader's search path (the cadence-mpi-swap package does that).
 *
 * The one reference below is what keeps the dependency: the build links
 * with --as-needed, which drops a library nothing refers to. */
int PMPI_Initialized(int *flag);

__attribute__((used)) static int (*const cdn_libmpich_needs_libmpi)(int *) = PMPI_Initialized;
