"""The HCOMM data plane: primitives that enqueue tasks on threads (raising implementations)."""
