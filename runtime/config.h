/*
 * Configuration: every CADENCE_ environment variable the library or its
 * tools read is registered in one table (config.c), which mpiinfo --params
 * prints and docs/environment.md describes.  Reading an unregistered name
 * is a programming error caught in debug builds.
 */
#ifndef CDN_CONFIG_H
#define CDN_CONFIG_H

struct cdn_param {
    const char *name;
    const char *type;      /* "string", "integer", "boolean", "choice" */
    const char *deflt;
    const char *read_by;   /* "library", "mpicc", "mpirun" */
    const char *desc;
};

extern const struct cdn_param cdn_params[];
extern const int cdn_nparams;

/* The variable's value, or NULL when unset or empty. */
const char *cdn_param_str(const char *name);
/* The value of an integer or boolean variable (yes/true/on, no/false/off;
 * k and M suffixes), with a default and a range: a value that does not
 * parse or is out of range is reported on stderr and the default used. */
long cdn_param_long(const char *name, long deflt, long min, long max);

#endif
