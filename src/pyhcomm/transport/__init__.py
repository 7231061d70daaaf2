"""Transports: how the ends of a channel find each other and how bytes and notifies cross between
ranks (:mod:`.base` for the contract, :mod:`.local` for ranks in one process)."""
