"""Rank bodies that fail with a bare ``assert`` (a helper module: pytest does not rewrite its
asserts, so they fail as they do in a user's program, with no message)."""


def rank_2_asserts(comm):
    assert comm.rank != 2  # bare assert


def rank_1_asserts(comm):
    assert comm.rank == 0  # assert in verify
