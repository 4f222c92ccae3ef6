/*
 * mpiinfo — what this Cadence MPI is: version, build options, transports,
 * the CADENCE_ environment variables, and which declared MPI functions are
 * implemented.  It reads the same generated API table and parameter table
 * the library is built from.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_list.h"
#include "cdn_build_config.h"
#include "runtime/config.h"
#include "transport/transport.h"

/* Every transport built in, and for the fabric ones, which the default
 * list leaves out, what this machine offers them. */
static void print_transports(void)
{
    int n;
    const struct cdn_transport_kind *k = cdn_transport_kinds(&n);
    printf("  Transports:        built in (CADENCE_TRANSPORTS; default: those without \"named\"):\n");
    for (int i = 0; i < n; i++) {
        char here[256] = "";
        if (k[i].probe != NULL)
            k[i].probe(here, sizeof here);
        printf("    %-6s %s%s%s%s\n", k[i].name, k[i].reaches, k[i].named_only ? "; named" : "",
               here[0] != '\0' ? "; here: " : "", here);
    }
    printf("    self   a process's messages to itself\n");
    printf("  Fabric libraries:  %s\n", CDN_FABRIC_LIBS);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mpiinfo [option]\n"
            "  (none)            version, build options, transports, parameters\n"
            "  --params          the CADENCE_ environment variables\n"
            "  --unimplemented   declared MPI functions not implemented yet, with a count\n"
            "  --implemented     the functions that are implemented, with a count\n"
            "  --version         the version line only\n"
            "  --help            this text\n");
}

static void print_params(void)
{
    printf("Environment variables (%d):\n", cdn_nparams);
    for (int i = 0; i < cdn_nparams; i++) {
        const struct cdn_param *p = &cdn_params[i];
        const char *v = getenv(p->name);
        printf("  %s  [%s, read by %s, default: %s]%s%s\n      %s\n", p->name, p->type,
               p->read_by, p->deflt, v ? "  currently: " : "", v ? v : "", p->desc);
    }
}

static int list_functions(int want_implemented)
{
    int n = 0, total = cdn_api_table_len;
    const char *chapter = NULL;
    for (int i = 0; i < total; i++) {
        const struct cdn_api_fn *f = &cdn_api_table[i];
        if (!!(f->flags & CDN_API_IMPLEMENTED) != want_implemented)
            continue;
        if (chapter == NULL || strcmp(chapter, f->chapter) != 0) {
            chapter = f->chapter;
            printf("[%s]\n", chapter);
        }
        printf("  %s%s%s%s\n", f->name, (f->flags & CDN_API_DEPRECATED) ? "  (deprecated)" : "",
               (f->flags & CDN_API_REMOVED) ? "  (removed in MPI-3.0)" : "",
               (f->flags & CDN_API_SINCE_4_1) ? "  (MPI-4.1)" : "");
        n++;
    }
    printf("%d of %d declared functions are %s.\n", n, total,
           want_implemented ? "implemented" : "not implemented yet");
    return 0;
}

static int count_implemented(void)
{
    int n = 0;
    for (int i = 0; i < cdn_api_table_len; i++)
        n += !!(cdn_api_table[i].flags & CDN_API_IMPLEMENTED);
    return n;
}

int main(int argc, char **argv)
{
    if (argc > 2) {
        usage(stderr);
        return 2;
    }
    const char *opt = argc == 2 ? argv[1] : "";
    if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(opt, "--version") == 0) {
        /* The first line of the library's own version string. */
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(version, &len);
        printf("%.*s\n", (int)strcspn(version, "\n"), version);
        return 0;
    }
    if (strcmp(opt, "--unimplemented") == 0)
        return list_functions(0);
    if (strcmp(opt, "--implemented") == 0)
        return list_functions(1);
    if (strcmp(opt, "--params") == 0) {
        print_params();
        return 0;
    }
    if (opt[0] != '\0') {
        fprintf(stderr, "mpiinfo: unknown option '%s'\n", opt);
        usage(stderr);
        return 2;
    }
    printf("Cadence MPI %s\n", CDN_VERSION);
    printf("  MPI standard:      %d.%d\n", MPI_VERSION, MPI_SUBVERSION);
    printf("  ABI:               MPICH (libmpi.so.12, also libmpich.so.12)\n");
    printf("  Compiler:          %s\n", CDN_BUILD_CC);
    printf("  Build options:     %s\n", CDN_BUILD_OPTIONS);
    print_transports();
    printf("  Functions:         %d of %d declared functions implemented "
           "(mpiinfo --unimplemented lists the rest)\n", count_implemented(), cdn_api_table_len);
    print_params();
    return 0;
}
