#!/bin/sh
# check_layers.sh SOURCE_ROOT: the layering rules that can be read off the
# sources (docs/architecture.md, "Dependency direction").  Fails naming the
# offending lines.
#   - transport/ does not read or write the engine's state (cdn_engine):
#     it asks the engine through the calls in transport/transport.h;
#   - transport/ includes nothing from api/, sched/ or coll/;
#   - api/, sched/ and coll/ include nothing from transport/ (they reach
#     the network through progress/);
#   - runtime/ (the objects that do not communicate: handles, datatypes,
#     groups, info, attributes, errors, configuration, communicator and
#     window objects) includes nothing from progress/, sched/, coll/,
#     transport/ or api/: what communicates to create objects lives in
#     coll/, and bringing the process up through every layer in api/;
#   - no transport source reaches the request's private headers
#     (progress/request.h, p2p.h, match.h), directly or through the headers
#     it includes: a transport sees a message as a struct cdn_xfer
#     (transport/transport.h), never as a request.
set -u
root=$1
failed=0
sources() {
    find "$root/$1" -name '*.[ch]' | sort
}
count() {
    printf '%s\n' "$1" | grep -c .
}
# rule NAME FILES PATTERN: no line of FILES matches PATTERN
rule() {
    name=$1 files=$2 pattern=$3
    if [ "$(count "$files")" -lt 2 ]; then
        printf 'FAIL: %s: found only %d source files\n' "$name" "$(count "$files")"
        failed=1
        return
    fi
    bad=$(grep -n -- "$pattern" $files)
    if [ -n "$bad" ]; then
        printf 'FAIL: %s:\n%s\n' "$name" "$bad"
        failed=1
    else
        printf 'ok: %s (%d files)\n' "$name" "$(count "$files")"
    fi
}
transport=$(sources transport)
above=$(sources api; sources sched; sources coll)
rule "transport/ does not touch cdn_engine" "$transport" 'cdn_engine\.'
rule "transport/ includes nothing from api/, sched/, coll/" "$transport" '#include "\(api\|sched\|coll\)/'
rule "api/, sched/, coll/ include nothing from transport/" "$above" '#include "transport/'
rule "runtime/ includes nothing from progress/, sched/, coll/, transport/, api/" "$(sources runtime)" \
    '#include "\(progress\|sched\|coll\|transport\|api\)/'
# closure FILE: FILE and every project header it includes, transitively
closure() {
    todo=$1 seen=''
    while [ -n "$todo" ]; do
        f=${todo%% *}
        case "$todo" in *' '*) todo=${todo#* } ;; *) todo='' ;; esac
        case " $seen " in *" $f "*) continue ;; esac
        seen="$seen $f"
        for h in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
            [ -f "$root/$h" ] && todo="$todo $root/$h"
            todo=${todo# }
        done
    done
    printf '%s\n' $seen
}
private='progress/\(request\|p2p\|match\)\.h$'
bad=''
for f in $transport; do
    hit=$(closure "$f" | grep -- "$private")
    [ -n "$hit" ] && bad="$bad$f reaches $(printf '%s' "$hit" | tr '\n' ' ')
"
done
if [ -n "$bad" ]; then
    printf 'FAIL: transport/ reaches the request headers:\n%s' "$bad"
    failed=1
else
    printf 'ok: no transport source reaches progress/request.h, p2p.h or match.h (%d files)\n' \
        "$(count "$transport")"
fi
exit $failed
