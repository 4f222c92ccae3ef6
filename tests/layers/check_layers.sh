#!/bin/sh
# check_layers.sh SOURCE_ROOT: the layering rules that can be read off the
# sources (docs/architecture.md, "Dependency direction").  Fails naming the
# offending lines.
#   - transport/ does not read or write the engine's state (cdn_engine):
#     it asks the engine through the calls in transport/transport.h.
set -u
root=$1
files=$(find "$root/transport" -name '*.[ch]' | sort)
n=$(printf '%s\n' "$files" | grep -c .)
if [ "$n" -lt 5 ]; then
    printf 'FAIL: found only %d source files under %s/transport\n' "$n" "$root"
    exit 1
fi
bad=$(grep -n 'cdn_engine\.' $files)
if [ -n "$bad" ]; then
    printf 'FAIL: transport/ touches the engine state (cdn_engine):\n%s\n' "$bad"
    exit 1
fi
printf 'ok: %d files under transport/, none touches cdn_engine\n' "$n"
