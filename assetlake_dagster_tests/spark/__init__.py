"""Layer 4: real Spark + Delta writes on the suite's one in-process session."""
