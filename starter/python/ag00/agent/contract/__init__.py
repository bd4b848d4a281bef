"""Chapter ag00: one non-streaming model call and the contract around it.

Read the modules in this order:

- ``request``  builds the Responses request (model, instructions, input, tool, budget);
- ``classify`` sorts a reply into exactly one kind, reading three statuses in turn;
- ``orders``   executes the one read-only tool, with identity taken from the session;
- ``loop``     runs bounded turns, returns results by ``call_id`` and checks the answer.
"""
