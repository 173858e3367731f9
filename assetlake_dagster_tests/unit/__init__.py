"""Layer 1-3: grammar, projects, SQL generation, the CLI's pure commands. No Spark; seconds."""
