"""Your agent, built one chapter at a time: `course list` shows where you are."""
