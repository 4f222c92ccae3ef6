#!/bin/sh
# skip.sh REASON... — stands in for a test that cannot run on this machine:
# prints why and exits 77, which meson counts as a skip (never a pass).
echo "SKIP: $*"
exit 77
