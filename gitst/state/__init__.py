"""The runtime store (seed 001's ``state/``): paths, locks, registry, pipeline state."""
