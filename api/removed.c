/*
 * Functions removed from the standard in MPI-3.0 that MPICH 4 still
 * provides and declares, so that programs (and binaries) written for MPI-1
 * keep working: each calls its modern replacement.  An error names both
 * functions ("MPI_Type_extent: MPI_Type_get_extent: datatype is
 * MPI_DATATYPE_NULL").  The attribute functions of MPI-1 (MPI_Attr_*,
 * MPI_Keyval_*) are deprecated, not removed, and live with the others in
 * api/comm_attr.c.
 */
#include "api/entry.h"
#include "cdn_api_impl.h"

int cdn_MPI_Address(void *location, MPI_Aint *address)
{
    return cdn_err_prefix(cdn_MPI_Get_address(location, address), "MPI_Address");
}

int cdn_MPI_Errhandler_create(MPI_Comm_errhandler_function *comm_errhandler_fn,
                              MPI_Errhandler *errhandler)
{
    return cdn_err_prefix(cdn_MPI_Comm_create_errhandler(comm_errhandler_fn, errhandler),
                          "MPI_Errhandler_create");
}

int cdn_MPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler)
{
    return cdn_err_prefix(cdn_MPI_Comm_get_errhandler(comm, errhandler), "MPI_Errhandler_get");
}

int cdn_MPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler)
{
    return cdn_err_prefix(cdn_MPI_Comm_set_errhandler(comm, errhandler), "MPI_Errhandler_set");
}

/* lb and extent of datatype, or an error naming caller. */
static int lb_extent(MPI_Datatype datatype, const void *out, const char *outname, MPI_Aint *lb,
                     MPI_Aint *extent, const char *caller)
{
    if (out == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", caller, outname);
    return cdn_err_prefix(cdn_MPI_Type_get_extent(datatype, lb, extent), caller);
}

int cdn_MPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent)
{
    MPI_Aint lb, ext;
    int rc = lb_extent(datatype, extent, "extent", &lb, &ext, "MPI_Type_extent");
    if (rc == MPI_SUCCESS)
        *extent = ext;
    return rc;
}

int cdn_MPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement)
{
    MPI_Aint lb, ext;
    int rc = lb_extent(datatype, displacement, "displacement", &lb, &ext, "MPI_Type_lb");
    if (rc == MPI_SUCCESS)
        *displacement = lb;
    return rc;
}

int cdn_MPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement)
{
    MPI_Aint lb, ext;
    int rc = lb_extent(datatype, displacement, "displacement", &lb, &ext, "MPI_Type_ub");
    if (rc == MPI_SUCCESS)
        *displacement = lb + ext;
    return rc;
}

int cdn_MPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                         MPI_Datatype *newtype)
{
    return cdn_err_prefix(cdn_MPI_Type_create_hvector(count, blocklength, stride, oldtype, newtype),
                          "MPI_Type_hvector");
}

int cdn_MPI_Type_hindexed(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[],
                          MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return cdn_err_prefix(cdn_MPI_Type_create_hindexed(count, array_of_blocklengths,
                                                       array_of_displacements, oldtype, newtype),
                          "MPI_Type_hindexed");
}

int cdn_MPI_Type_struct(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[],
                        MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    return cdn_err_prefix(cdn_MPI_Type_create_struct(count, array_of_blocklengths,
                                                     array_of_displacements, array_of_types, newtype),
                          "MPI_Type_struct");
}
