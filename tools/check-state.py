#!/usr/bin/env python3
"""The core's process-wide and thread-local mutable state, held to a list.

Usage: check-state.py CORE_DIR ALLOW_FILE

Reads every .c and .h file under CORE_DIR and finds each variable that
outlives a call: a thread-local (_Thread_local, __thread, thread_local) and
a `static` variable, at file scope or inside a function, whose object is not
itself const (`static const char *p` is a mutable pointer; `static const int
n`, `static const char *const names[]` are not). Each one is printed as
`path: declaration`, and the list must equal ALLOW_FILE's (one such line
each, `#` comments and blank lines ignored): a new one fails naming it, and
so does a listed one that is gone (take its line out). docs/architecture.md
says why each listed one stays.
"""
import os
import re
import sys

DECL = re.compile(r'^\s*static\b(?P<rest>.*)$')
THREAD = re.compile(r'\b(_Thread_local|__thread|thread_local)\b')


def strip_comments(text):
    """Comments and string literals blanked, line structure kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            out.append(c + ' ' * (min(j, n) - i - 1) + (c if j < n else ''))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def is_const_object(decl):
    """Whether the declared object itself is const (decl: after `static`)."""
    head = decl.split('=')[0]
    if re.search(r'\*\s*const\b[^*]*$', head):
        return True  # T *const name
    if '*' in head:
        return False  # a pointer to const data is itself mutable
    return re.search(r'\bconst\b', head) is not None


def mutable_statics(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        lines = strip_comments(f.read()).split('\n')
    found = []
    for line in lines:
        m = DECL.match(line)
        text = line.strip()
        if THREAD.search(line):
            found.append(text)
            continue
        if not m:
            continue
        rest = m.group('rest').strip()
        if rest.startswith('inline') or rest.startswith('_Noreturn'):
            continue
        head = rest.split('=')[0]
        if '(' in head and not re.search(r'\(\s*\*', head):
            continue  # a function (a pointer to one, `(*name)`, is a variable)
        # a declaration of an object: ends in ; or =, or opens a struct body
        if not (re.search(r'[;=]', rest) or re.search(r'\b(struct|union)\b[^;]*\{\s*$', rest)):
            continue
        if is_const_object(rest):
            continue
        found.append(text)
    return found


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    core, allow_path = sys.argv[1], sys.argv[2]
    have = set()
    for root, _, files in os.walk(core):
        for name in sorted(files):
            if name.endswith(('.c', '.h')):
                path = os.path.join(root, name)
                rel = os.path.relpath(path, os.path.dirname(os.path.abspath(core)))
                for decl in mutable_statics(path):
                    have.add(f'{rel}: {decl}')
    allow = set()
    with open(allow_path, encoding='utf-8') as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith('#'):
                allow.add(line)
    bad = 0
    for item in sorted(have - allow):
        print(f'check-state: not on the list (a process-wide or thread-local variable in '
              f'core/: pass it in what the call is given, or add it to {allow_path} and say '
              f'why in docs/architecture.md): {item}')
        bad += 1
    for item in sorted(allow - have):
        print(f'check-state: listed but gone (take its line out of {allow_path}): {item}')
        bad += 1
    if bad:
        sys.exit(1)
    print(f'check-state: {len(have)} process-wide or thread-local variables in core/, '
          f'each on the list')


if __name__ == '__main__':
    main()
