"""Analyses of a Sim's record (tools: they read the record; the core never imports them).

* :mod:`.happens_before`: the happens-before graph of a record (what the race detector, the
  notify checks and the timing model replay).
"""
