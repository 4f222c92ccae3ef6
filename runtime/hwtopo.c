/*
 * Hardware locality for MPI_Comm_split_type: the node comes from the
 * launcher's list of local peers (PMIx), the levels inside it from hwloc
 * and the process's binding (mpirun binds ranks to cores).  The topology is
 * loaded once, on first use.
 */
#include "runtime/hwtopo.h"

#include <hwloc.h>
#include <pthread.h>
#include <string.h>

#include "runtime/runtime.h"

const char *const cdn_hw_levels[] = {"mpi_shared_memory", "Package", "NUMANode", "L3Cache",
                                     "L2Cache", "L1Cache", "Core", "PU"};
const int cdn_hw_nlevels = (int)(sizeof cdn_hw_levels / sizeof cdn_hw_levels[0]);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static hwloc_topology_t topo;
static bool topo_ok;

static void load(void)
{
    if (hwloc_topology_init(&topo) != 0)
        return;
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return;
    }
    topo_ok = true;
}

int cdn_hw_node_color(void)
{
    return cdn_rt.local_peers != NULL && cdn_rt.local_size > 0 ? cdn_rt.local_peers[0]
                                                                : cdn_rt.world_rank;
}

bool cdn_hw_color(const char *name, int *color)
{
    if (strcmp(name, "mpi_shared_memory") == 0) {
        *color = cdn_hw_node_color();
        return true;
    }
    pthread_once(&once, load);
    if (!topo_ok)
        return false;
    hwloc_obj_type_t type;
    union hwloc_obj_attr_u attr;
    if (hwloc_type_sscanf(name, &type, &attr, sizeof attr) != 0)
        return false;
    if (hwloc_get_type_depth(topo, type) == HWLOC_TYPE_DEPTH_UNKNOWN)
        return false;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set == NULL)
        return false;
    bool ok = false;
    if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(set)) {
        hwloc_obj_t obj = hwloc_get_obj_covering_cpuset(topo, set);
        hwloc_obj_t o = NULL;
        if (obj != NULL && type == HWLOC_OBJ_NUMANODE) {
            /* NUMA nodes hang off the normal tree: take the first local one */
            for (hwloc_obj_t a = obj; a != NULL && o == NULL; a = a->parent)
                if (a->memory_arity > 0 && a->memory_first_child->type == HWLOC_OBJ_NUMANODE &&
                    hwloc_bitmap_isincluded(set, a->memory_first_child->cpuset))
                    o = a->memory_first_child;
        } else if (obj != NULL) {
            o = obj->type == type ? obj : hwloc_get_ancestor_obj_by_type(topo, type, obj);
        }
        if (o != NULL && (type != HWLOC_OBJ_CORE || hwloc_bitmap_isincluded(set, o->cpuset)) &&
            o->logical_index < 65536) {
            *color = cdn_hw_node_color() * 65536 + (int)o->logical_index;
            ok = true;
        }
    }
    hwloc_bitmap_free(set);
    return ok;
}
