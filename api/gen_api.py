#!/usr/bin/env python3
"""Generate Cadence's C API from the one API table.

Inputs (all in api/): mpi.api (every function, one prototype a line, with
flags), mpi_constants.txt (name, type, value) and mpi.h.in (the hand-written
types).  Outputs, into the build directory:

  mpi.h             the public header: types, constants, MPI_ and PMPI_
                    prototypes.
  cdn_api_entry.c   one PMPI_ entry point per function with its MPI_ weak
                    alias (the profiling interface).  An implemented function
                    checks that MPI is usable, calls cdn_<name>() and hands an
                    error to the error handler of the call's object; a
                    function not implemented yet raises
                    MPI_ERR_UNSUPPORTED_OPERATION naming itself.
  cdn_api_impl.h    prototypes of the cdn_<name>() implementations.
  cdn_api_list.c    the table mpiinfo reports from (name, chapter, status).

A mismatch between the table and the code fails the build: a function
flagged impl without cdn_<name>() is an undefined symbol, a cdn_<name>()
without the flag is never called and a PMPI_ written by hand without the
manual flag is a duplicate definition.
"""
import argparse
import re
import sys

HANDLE_OBJECTS = {  # by-value argument type -> error-raising function
    'MPI_Comm': 'cdn_err_raise_comm',
    'MPI_Win': 'cdn_err_raise_win',
    'MPI_File': 'cdn_err_raise_file',
    'MPI_Session': 'cdn_err_raise_session',
}
FLAGS = {'impl', 'manual', 'anytime', 'noerrh', 'reqerrh', 'deprecated', 'removed', 'ext', 'since=4.1'}


class Param:
    def __init__(self, text):
        self.text = text.strip()
        m = re.match(r'^(.*?)(\w+)\s*((?:\[[^\]]*\])*)$', self.text)
        if not m:
            raise ValueError(f'cannot parse parameter {text!r}')
        self.type = ' '.join(m.group(1).split())
        self.name = m.group(2)
        self.array = m.group(3)


class Function:
    def __init__(self, line, chapter, lineno):
        proto, _, flags = line.partition(' | ')
        self.flags = set(flags.split())
        unknown = self.flags - FLAGS
        if unknown:
            raise ValueError(f'line {lineno}: unknown flags {sorted(unknown)}')
        m = re.match(r'^(.+?)\s*\b(MPIX?_\w+)\((.*)\)$', proto.strip())
        if not m:
            raise ValueError(f'line {lineno}: cannot parse {proto!r}')
        self.ret = m.group(1).strip()
        self.name = m.group(2)
        self.chapter = chapter
        args = m.group(3).strip()
        self.variadic = args.endswith('...')
        if self.variadic:
            args = args[:args.rindex(',')]
        self.params = [] if args in ('', 'void') else [Param(a) for a in args.split(',')]
        self.implemented = 'impl' in self.flags or 'manual' in self.flags
        if 'impl' in self.flags and 'manual' in self.flags:
            raise ValueError(f'line {lineno}: {self.name} is both impl and manual')
        if self.variadic and 'impl' in self.flags:
            raise ValueError(f'line {lineno}: variadic {self.name} must be manual')

    @property
    def pname(self):  # the profiling name: MPI_X -> PMPI_X, MPIX_X -> PMPIX_X
        return 'P' + self.name

    def decl_params(self):
        if not self.params:
            return '...' if self.variadic else 'void'
        # Status arrays are declared as pointers: MPI_STATUSES_IGNORE is the
        # address 1, which GCC (-Wstringop-overflow) flags when passed for an
        # array parameter.
        text = ', '.join(f'MPI_Status *{p.name}' if p.type == 'MPI_Status' and p.array
                         else p.text for p in self.params)
        return text + (', ...' if self.variadic else '')

    def call_args(self):
        return ', '.join(p.name for p in self.params)

    def error_object(self):
        """(raising function, argument) for the object whose handler sees errors."""
        if 'reqerrh' in self.flags:  # the communicator of the failing request
            return 'cdn_err_raise_request', None
        for p in self.params:
            if not p.array and p.type in HANDLE_OBJECTS:
                if self.name.startswith('MPI_File_') and p.type != 'MPI_File':
                    break  # MPI_File_open, _delete: on MPI_FILE_NULL (MPI-4.1 14.7)
                return HANDLE_OBJECTS[p.type], p.name
        if self.name.startswith('MPI_File_'):
            return 'cdn_err_raise_file', 'MPI_FILE_NULL'
        if self.name == 'MPI_Win_free':  # a free that fails leaves the window: its handler
            p = self.params[0]
            return 'cdn_err_raise_win', f'({p.name} != NULL ? *{p.name} : MPI_WIN_NULL)'
        return 'cdn_err_raise_self', None


def read_table(path):
    funcs, chapter, seen = [], None, set()
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            if line.startswith('['):
                chapter = line.strip('[]')
                continue
            fn = Function(line, chapter, lineno)
            if fn.name in seen:
                raise ValueError(f'line {lineno}: {fn.name} listed twice')
            seen.add(fn.name)
            funcs.append(fn)
    return funcs


def read_constants(path):
    out, section = [], None
    with open(path) as f:
        for line in f:
            line = line.rstrip()
            if not line or line.startswith('#'):
                continue
            if line.startswith('['):
                section = line.strip('[]')
                out.append(f'\n/* {section} */')
                continue
            name, ctype, value = line.split(None, 2)
            if ctype == '-':
                text = value if re.match(r'^[\w.]+$', value) else f'({value})'
                if value.startswith('-'):
                    text = f'({value})'
            else:
                text = f'(({ctype.replace("*", " *")}){value})'
            out.append(f'#define {name:<34s} {text}')
    return '\n'.join(out).lstrip('\n')


def zero_of(ret):
    return '0' if ret in ('int', 'double', 'MPI_Aint', 'MPI_Fint') or ret.startswith('MPI') else 'NULL'


def gen_header(funcs, template, constants, version):
    protos = []
    chapter = None
    for fn in funcs:
        if fn.chapter != chapter:
            chapter = fn.chapter
            protos.append(f'\n/* {chapter} */')
        protos.append(f'{fn.ret} {fn.name}({fn.decl_params()});')
        protos.append(f'{fn.ret} {fn.pname}({fn.decl_params()});')
    major, minor, patch = (int(x) for x in version.split('.'))
    text = template
    for key, val in {
        '@CDN_VERSION@': version,
        '@CDN_NUMVERSION@': str(major * 10000 + minor * 100 + patch),
        '@CDN_MPI_VERSION@': '4',
        '@CDN_MPI_SUBVERSION@': '1',
        '@CDN_CONSTANTS@': constants,
        '@CDN_PROTOTYPES@': '\n'.join(protos).lstrip('\n'),
    }.items():
        text = text.replace(key, val)
    leftover = re.findall(r'@CDN_\w+@', text)
    if leftover:
        raise ValueError(f'unreplaced template keys: {leftover}')
    return text


def gen_entry(fn):
    body = []
    raise_fn, obj = fn.error_object()
    obj_arg = obj if obj else ''
    returns_int = fn.ret == 'int'
    if 'anytime' not in fn.flags:
        fail = f'cdn_err_not_ready("{fn.name}")'
        if returns_int:
            body.append(f'    if (CDN_UNLIKELY(!cdn_api_ready()))\n        return {fail};')
        else:
            body.append(f'    if (CDN_UNLIKELY(!cdn_api_ready())) {{\n        (void){fail};\n'
                        f'        return ({fn.ret}){zero_of(fn.ret)};\n    }}')
    if 'impl' in fn.flags:
        call = f'cdn_{fn.name}({fn.call_args()})'
        # A call on a communicator of a stream: with CADENCE_STREAM_CHECKS
        # (on in debug builds) it claims the stream for its thread, and a
        # second thread inside at once is an error (api/stream.c).
        guarded = (returns_int and raise_fn == 'cdn_err_raise_comm' and
                   'anytime' not in fn.flags and 'noerrh' not in fn.flags)
        if guarded:
            body.append(f'    int g_ = CDN_UNLIKELY(cdn_stream_checks) ? '
                        f'cdn_api_stream_enter({obj}, "{fn.name}") : 0;')
            body.append(f'    if (CDN_UNLIKELY(g_ > 0))\n        return {raise_fn}({obj}, g_);')
        if not returns_int or 'noerrh' in fn.flags:
            body.append(f'    return {call};')
        else:
            body.append(f'    int rc = {call};')
            if guarded:
                body.append(f'    if (CDN_UNLIKELY(g_ < 0))\n        cdn_api_stream_leave({obj});')
            body.append(f'    if (CDN_UNLIKELY(rc != MPI_SUCCESS))\n        rc = {raise_fn}({obj_arg + ", " if obj else ""}rc);')
            body.append('    return rc;')
    else:
        unused = [f'    (void){p.name};' for p in fn.params if p.name != obj]
        body[:0] = unused
        code = f'cdn_err_unimplemented("{fn.name}")'
        if 'noerrh' in fn.flags:
            body.append(f'    return {code};')
        elif returns_int:
            body.append(f'    return {raise_fn}({obj_arg + ", " if obj else ""}{code});')
        else:
            body.append(f'    (void){raise_fn}({obj_arg + ", " if obj else ""}{code});')
            body.append(f'    return ({fn.ret}){zero_of(fn.ret)};')
    return (f'{fn.ret} {fn.pname}({fn.decl_params()})\n{{\n' + '\n'.join(b for b in body if b) +
            f'\n}}\n#pragma weak {fn.name} = {fn.pname}\n')


def gen_entries(funcs):
    parts = ['/* Generated by api/gen_api.py from api/mpi.api: the PMPI_ entry points. */',
             '#include "api/entry.h"', '#include "cdn_api_impl.h"', '']
    parts += [gen_entry(fn) for fn in funcs if 'manual' not in fn.flags]
    return '\n'.join(parts)


def gen_impl_header(funcs):
    out = ['/* Generated by api/gen_api.py: the implementations behind the entry points. */',
           '#ifndef CDN_API_IMPL_H', '#define CDN_API_IMPL_H', '#include <mpi.h>', '']
    for fn in funcs:
        if 'impl' in fn.flags:
            out.append(f'{fn.ret} cdn_{fn.name}({fn.decl_params()});')
    out += ['', '#endif', '']
    return '\n'.join(out)


def gen_list(funcs):
    out = ['/* Generated by api/gen_api.py: every function of the API table and its status. */',
           '#include "api/api_list.h"', '', 'const struct cdn_api_fn cdn_api_table[] = {']
    for fn in funcs:
        flags = ' | '.join(['CDN_API_IMPLEMENTED'] * fn.implemented +
                           ['CDN_API_DEPRECATED'] * ('deprecated' in fn.flags) +
                           ['CDN_API_EXTENSION'] * ('ext' in fn.flags) +
                           ['CDN_API_REMOVED'] * ('removed' in fn.flags) +
                           ['CDN_API_SINCE_4_1'] * ('since=4.1' in fn.flags)) or '0'
        out.append(f'    {{"{fn.name}", "{fn.chapter}", {flags}}},')
    out += ['};', f'const int cdn_api_table_len = {len(funcs)};', '']
    return '\n'.join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--table', required=True)
    ap.add_argument('--constants', required=True)
    ap.add_argument('--template', required=True)
    ap.add_argument('--version', required=True)
    ap.add_argument('--outdir', required=True)
    a = ap.parse_args()
    try:
        funcs = read_table(a.table)
        constants = read_constants(a.constants)
        with open(a.template) as f:
            header = gen_header(funcs, f.read(), constants, a.version)
    except ValueError as e:
        sys.exit(f'gen_api.py: {e}')
    outputs = {
        'mpi.h': header,
        'cdn_api_entry.c': gen_entries(funcs),
        'cdn_api_impl.h': gen_impl_header(funcs),
        'cdn_api_list.c': gen_list(funcs),
    }
    for name, text in outputs.items():
        with open(f'{a.outdir}/{name}', 'w') as f:
            f.write(text)


if __name__ == '__main__':
    main()
