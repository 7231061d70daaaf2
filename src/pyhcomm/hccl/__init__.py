"""The HCCL control plane: communicators, the HCCL buffer, threads (raising implementations)."""
