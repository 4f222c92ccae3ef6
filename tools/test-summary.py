#!/usr/bin/env python3
"""Print one closing line for a meson test run: 'tests: N passed, N failed, N skipped'."""
import json
import sys

passed = failed = skipped = 0
with open(sys.argv[1]) as f:
    for line in f:
        result = json.loads(line).get('result')
        if result in ('OK', 'EXPECTEDFAIL'):
            passed += 1
        elif result == 'SKIP':
            skipped += 1
        else:
            failed += 1
print(f'tests: {passed} passed, {failed} failed, {skipped} skipped')
