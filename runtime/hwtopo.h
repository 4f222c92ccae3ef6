/*
 * Where this process sits in the machine (hwloc), for MPI_Comm_split_type.
 */
#ifndef CDN_HWTOPO_H
#define CDN_HWTOPO_H

#include <stdbool.h>

/* A colour naming this node (the same on every process of the node). */
int cdn_hw_node_color(void);
/* A colour naming the object of hwloc type `name` ("Package", "NUMANode",
 * "L3Cache", "Core", ...; "mpi_shared_memory" is the node) that holds this
 * process's binding, unique in the job.  False when `name` is no type of
 * this machine or the binding spans several such objects. */
bool cdn_hw_color(const char *name, int *color);
/* The levels MPI_COMM_TYPE_HW_UNGUIDED tries, outermost first. */
extern const char *const cdn_hw_levels[];
extern const int cdn_hw_nlevels;

#endif
