/* MPI-4.1 pieces of communicators and windows:
 * - MPI_COMM_TYPE_RESOURCE_GUIDED (MPICH's value 4): by mpi_hw_resource_type
 *   (as MPI_COMM_TYPE_HW_GUIDED; "hwloc://" prefixes accepted there too) or
 *   by mpi_pset_name (mpi://WORLD, mpi://SELF); anything else, or neither
 *   key, gives MPI_COMM_NULL;
 * - MPI_Comm_get_name / MPI_Win_get_name on the null handles;
 * - MPI_Win_shared_query on windows of MPI_Win_allocate and MPI_Win_create:
 *   this process's own part, size 0 and NULL for any other; dynamic windows
 *   are MPI_ERR_RMA_FLAVOR. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "check_mpi.h"

static int rank, size;

static MPI_Comm split_by(const char *key, const char *value)
{
    MPI_Info info = MPI_INFO_NULL;
    if (key != NULL) {
        MPI_Info_create(&info);
        MPI_Info_set(info, key, value);
    }
    MPI_Comm c;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_RESOURCE_GUIDED, rank, info, &c);
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    return c;
}

static int size_of(MPI_Comm c)
{
    int n = -1;
    if (c != MPI_COMM_NULL)
        MPI_Comm_size(c, &n);
    return n;
}

static void resource_guided(void)
{
    CHECK(MPI_COMM_TYPE_RESOURCE_GUIDED == 4, "MPI_COMM_TYPE_RESOURCE_GUIDED is %d",
          MPI_COMM_TYPE_RESOURCE_GUIDED);
    MPI_Comm node, c;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);

    c = split_by("mpi_hw_resource_type", "mpi_shared_memory");
    int cmp = -1;
    if (c != MPI_COMM_NULL)
        MPI_Comm_compare(c, node, &cmp);
    CHECK(cmp == MPI_CONGRUENT, "resource guided mpi_shared_memory: compare %d with the node", cmp);
    if (c != MPI_COMM_NULL)
        MPI_Comm_free(&c);

    /* a hwloc type with and without the prefix, and through HW_GUIDED: the
     * same communicator (or MPI_COMM_NULL everywhere for an unbound process) */
    MPI_Comm plain = split_by("mpi_hw_resource_type", "Package");
    MPI_Comm prefixed = split_by("mpi_hw_resource_type", "hwloc://Package");
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_hw_resource_type", "hwloc://Package");
    MPI_Comm hw;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, info, &hw);
    MPI_Info_free(&info);
    CHECK(size_of(plain) == size_of(prefixed) && size_of(hw) == size_of(plain),
          "Package: sizes %d (plain) %d (hwloc://) %d (HW_GUIDED)", size_of(plain),
          size_of(prefixed), size_of(hw));
    MPI_Comm *all[] = {&plain, &prefixed, &hw};
    for (int i = 0; i < 3; i++)
        if (*all[i] != MPI_COMM_NULL)
            MPI_Comm_free(all[i]);

    c = split_by("mpi_pset_name", "mpi://WORLD");
    CHECK(size_of(c) == size, "pset mpi://WORLD: size %d, want %d", size_of(c), size);
    if (c != MPI_COMM_NULL) {
        int r, sum = 0;
        MPI_Comm_rank(c, &r);
        CHECK(r == rank, "pset mpi://WORLD: rank %d, want %d (key order)", r, rank);
        MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, c);
        CHECK(sum == size * (size - 1) / 2, "pset mpi://WORLD: sum %d", sum);
        MPI_Info used;
        char v[64] = "";
        int flag = 0, len = (int)sizeof v;
        MPI_Comm_get_info(c, &used);
        MPI_Info_get_string(used, "mpi_pset_name", &len, v, &flag);
        CHECK(flag && strcmp(v, "mpi://WORLD") == 0, "pset info: %s", flag ? v : "(unset)");
        MPI_Info_free(&used);
        MPI_Comm_free(&c);
    }
    c = split_by("mpi_pset_name", "mpi://SELF");
    CHECK(size_of(c) == 1, "pset mpi://SELF: size %d", size_of(c));
    if (c != MPI_COMM_NULL)
        MPI_Comm_free(&c);
    c = split_by("mpi_pset_name", "mpi://no-such-set");
    CHECK(c == MPI_COMM_NULL, "unknown pset: not MPI_COMM_NULL");
    c = split_by("mpi_hw_resource_type", "NoSuchThing");
    CHECK(c == MPI_COMM_NULL, "unknown resource type: not MPI_COMM_NULL");
    c = split_by(NULL, NULL);
    CHECK(c == MPI_COMM_NULL, "no key: not MPI_COMM_NULL");
    MPI_Comm_free(&node);
}

static void null_names(void)
{
    char name[MPI_MAX_OBJECT_NAME] = "";
    int len = -1;
    int rc = MPI_Comm_get_name(MPI_COMM_NULL, name, &len);
    CHECK(rc == MPI_SUCCESS && strcmp(name, "MPI_COMM_NULL") == 0 && len == 13,
          "MPI_Comm_get_name(MPI_COMM_NULL): rc %d '%s' %d", rc, name, len);
    name[0] = '\0';
    rc = MPI_Win_get_name(MPI_WIN_NULL, name, &len);
    CHECK(rc == MPI_SUCCESS && strcmp(name, "MPI_WIN_NULL") == 0 && len == 12,
          "MPI_Win_get_name(MPI_WIN_NULL): rc %d '%s' %d", rc, name, len);
}

/* Every rank queried on w: this process's part, nothing of the others'. */
static void query_private(MPI_Win w, void *mine, MPI_Aint mysize, int mydu, const char *what)
{
    for (int r = 0; r < size; r++) {
        MPI_Aint sz = -1;
        int du = -1;
        void *base = (void *)1;
        int rc = MPI_Win_shared_query(w, r, &sz, &du, &base);
        if (r == rank)
            CHECK(rc == MPI_SUCCESS && sz == mysize && du == mydu && base == mine,
                  "%s: own part: rc %d size %ld du %d base %p (want %ld %d %p)", what, rc,
                  (long)sz, du, base, (long)mysize, mydu, mine);
        else
            CHECK(rc == MPI_SUCCESS && sz == 0 && base == NULL,
                  "%s: rank %d's part: rc %d size %ld base %p, want 0 NULL", what, r, rc,
                  (long)sz, base);
    }
    MPI_Aint sz = -1;
    int du = -1;
    void *base = (void *)1;
    int rc = MPI_Win_shared_query(w, MPI_PROC_NULL, &sz, &du, &base);
    CHECK(rc == MPI_SUCCESS && sz == mysize && base == (mysize > 0 ? mine : NULL),
          "%s: MPI_PROC_NULL: rc %d size %ld base %p", what, rc, (long)sz, base);
}

static void shared_query_flavors(void)
{
    MPI_Win w;
    void *base;
    MPI_Aint bytes = 64 + 8 * rank;
    MPI_Win_allocate(bytes, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
    query_private(w, base, bytes, 8, "MPI_Win_allocate");
    MPI_Win_free(&w);

    /* rank 1 exposes nothing: MPI_PROC_NULL there finds no part */
    static double buf[16];
    MPI_Aint n = rank == 1 ? 0 : (MPI_Aint)sizeof buf;
    MPI_Win_create(rank == 1 ? NULL : buf, n, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    query_private(w, rank == 1 ? NULL : buf, n, 4, "MPI_Win_create");
    MPI_Win_free(&w);

    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    MPI_Aint sz;
    int du, cls = -1;
    void *b;
    int rc = MPI_Win_shared_query(w, 0, &sz, &du, &b);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RMA_FLAVOR, "dynamic window: class %d, want MPI_ERR_RMA_FLAVOR", cls);
    MPI_Win_free(&w);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    resource_guided();
    null_names();
    shared_query_flavors();
    int r = check_summary("t_comm_41");
    MPI_Finalize();
    return r;
}
