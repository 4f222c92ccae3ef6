#!/usr/bin/env python3
"""Summarise a meson test run (build/meson-logs/testlog.json).

    test-summary.py TESTLOG [--expect SUITE,SUITE,...]

Prints why each skipped test skipped, then one closing line:
'tests: N passed, N failed, N skipped'.  Exits non-zero when a suite that
CI expects (--expect; by default every suite of the tree) is absent from
the run or had every test skipped: a suite that silently stops running
must fail the run, not shrink it.  quickstart.sh test calls this.
"""
import argparse
import json
import sys

EXPECTED = ['unit', 'mpi', 'mpi-tcp', 'mpi-udp', 'mpi-udp-faults', 'mpi-ofi', 'mpi-ofi-shm', 'mpi-ucx', 'mpi-ucx-shm', 'comm',
            'coll', 'abi', 'diff',
            'discovery', 'launch',
            'slurm', 'package']


def suites_of(name):
    """'cadence:mpi+comm / win-2' -> ['mpi', 'comm'] (meson's test name)."""
    prefix = name.split(' / ', 1)[0] if ' / ' in name else ''
    return prefix.split(':', 1)[-1].split('+') if prefix else []


def skip_reason(test):
    for line in (test.get('stdout') or '').splitlines():
        if line.startswith('SKIP'):
            return line
    return 'no reason printed'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('testlog')
    ap.add_argument('--expect', default=','.join(EXPECTED),
                    help='comma-separated suites that must have run tests (default: %(default)s)')
    args = ap.parse_args()
    expected = [s for s in args.expect.split(',') if s]

    passed = failed = skipped = 0
    ran = {}      # suite -> tests that ran (not skipped)
    listed = {}   # suite -> tests in the log
    try:
        with open(args.testlog) as f:
            tests = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        print(f'test-summary: cannot read {args.testlog}: {e}')
        print('tests: 0 passed, 0 failed, 0 skipped')
        return 1
    for t in tests:
        result = t.get('result')
        suites = suites_of(t.get('name', ''))
        for s in suites:
            listed[s] = listed.get(s, 0) + 1
        if result == 'SKIP':
            skipped += 1
            print(f'skipped: {t.get("name")}: {skip_reason(t)}')
            continue
        for s in suites:
            ran[s] = ran.get(s, 0) + 1
        if result in ('OK', 'EXPECTEDFAIL'):
            passed += 1
        else:
            failed += 1

    bad = []
    for s in expected:
        if s not in listed:
            bad.append(f'suite {s} is absent from the run: its tests were not built or not run')
        elif s not in ran:
            bad.append(f'suite {s} ran no test: all {listed[s]} skipped (reasons above)')
    for b in bad:
        print(f'test-summary: FAIL: {b}')
    print(f'tests: {passed} passed, {failed} failed, {skipped} skipped')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
