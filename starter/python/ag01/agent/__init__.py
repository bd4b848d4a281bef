"""An agent, built one chapter at a time: this package holds your code.

Chapter {{ chapter.id }}: {{ chapter.title }}. Read it with `course show {{ chapter.id }}`.
"""
