"""aide entity-graph streams (seed 002): the reducer and stream replay."""
