"""The simulator core: memory, streams, tasks, the scheduler and the runtime state."""
