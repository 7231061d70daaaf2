"""HCOMM resources: threads, notifies, endpoints, channels, memory registration, engine contexts.

They belong to an owner (:class:`.owner.ResourceOwner`: a communicator rank, or an endpoint
without one) and know nothing of HCCL above them.
"""
