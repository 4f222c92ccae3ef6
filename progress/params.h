/*
 * Reading the engine's CADENCE_ variables (registered in runtime/config.c):
 * integers and booleans with a default and a range.  A value that does not
 * parse or is out of range is reported on stderr once and the default used.
 */
#ifndef CDN_PROGRESS_PARAMS_H
#define CDN_PROGRESS_PARAMS_H

long cdn_progress_param_long(const char *name, long deflt, long min, long max);

#endif
