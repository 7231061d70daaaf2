"""Findings a program labels as deliberate.

A program that races on purpose (an example showing that nothing moved before a synchronize)
says so on one of the lines a finding names, in a comment::

    print(dst.read())          # pyhcomm: deliberate race (the copy may not have run yet)

``# pyhcomm: deliberate KIND`` labels the findings of that kind (``race``, ``lost-record``,
``hang`` ...) that name the line (a side of a race, a wait of a hang, ...). A labelled finding is
still reported, marked with where it was labelled, but does not count: ``Report.ok`` holds and
``python -m pyhcomm verify`` exits 0 when every finding is labelled.
"""
from __future__ import annotations

import linecache
import re

#: The label, in a comment: ``# pyhcomm: deliberate race``.
LABEL = re.compile(r"#.*?\bpyhcomm:\s*deliberate\s+([a-z][a-z-]*)")
#: A call site as findings print it: ``path/to/file.py:42``.
SITE = re.compile(r"([^\s():,'\"]+\.py):(\d+)")


def sites(finding) -> list:
    """The ``(file, line)`` call sites a finding names, in order, each once."""
    text = "\n".join([finding.title] + list(finding.lines))
    return list(dict.fromkeys((path, int(line)) for path, line in SITE.findall(text)))


def label_of(finding) -> str | None:
    """``file:line`` of the comment labelling ``finding`` deliberate (its kind, on a line it
    names), or None."""
    for path, line in sites(finding):
        linecache.checkcache(path)          # the file as it is now (a program edited since)
        m = LABEL.search(linecache.getline(path, line))
        if m and m.group(1) == finding.kind:
            return f"{path}:{line}"
    return None
