/* Integer and boolean CADENCE_ variables of the engine (see params.h). */
#include "progress/params.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "runtime/config.h"

long cdn_progress_param_long(const char *name, long deflt, long min, long max)
{
    const char *v = cdn_param_str(name);
    if (v == NULL)
        return deflt;
    if (strcasecmp(v, "yes") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "on") == 0)
        return min <= 1 && 1 <= max ? 1 : deflt;
    if (strcasecmp(v, "no") == 0 || strcasecmp(v, "false") == 0 || strcasecmp(v, "off") == 0)
        return 0 >= min ? 0 : deflt;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 0);
    if (*end == 'k' || *end == 'K')
        x *= 1024, end++;
    else if (*end == 'm' || *end == 'M')
        x *= 1024 * 1024, end++;
    if (errno != 0 || *end != '\0' || x < min || x > max) {
        fprintf(stderr, "cadence: %s=%s is not a number in %ld..%ld; using %ld\n", name, v, min,
                max, deflt);
        return deflt;
    }
    return x;
}
