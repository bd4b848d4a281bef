"""An agent, built one chapter at a time: this package holds your code."""
