{#- What the learner receives in place of each region of the reference (reference/typescript/ag01/ts/agent/provider/sse.ts); everything else comes from the reference as it is (course.regions). -#}
{% block docstring %}
/**
 * Server-sent events: the bytes of a streamed answer turned into events (EventReader), and each
 * event's data into deltas (Decoder). Section 2.2 of the chapter gives the event-stream rules,
 * section 2.3 the decoding rules, section 3 two streams worked by hand.
 */
{% endblock %}
{% block EventReader %}
/**
 * The events of a text/event-stream body, read with `for await (const event of new EventReader(body))`.
 *
 * A read (`reader.read()` on the body) may end anywhere: inside a line, inside a UTF-8 character,
 * between the CR and the LF of one line end, between the two line ends of a blank line. Keep that
 * state from one read to the next: a TextDecoder used with `{ stream: true }` for the characters
 * (it also drops one leading BOM and makes bytes that are not UTF-8 U+FFFD), and your own memory
 * of the unfinished line and of a CR that ended the last text. Stay linear: keep the pieces of an
 * unfinished line or event and join them once; never search or copy what you already searched.
 * Only `{ done: true }` ends the body (a chunk of no bytes does not), and an error a read rejects
 * with goes to the caller as it came, after the events completed before it.
 *
 * [Symbol.asyncIterator]() returns the iterator: an object of yours with next() and return(), or
 * an async generator of a private method (`return this.#events()` with `async *#events()`).
 * Leaving the loop early (a `break`, an error) calls its return(), which must cancel the body
 * (`reader.cancel()`): in a generator, from a `finally` around the reading.
 */
{% endblock %}
{% block EventReader_iterate %}
    throw new Error("TODO ag01 §2.2: the events of the body, read by read");
{% endblock %}
{% block BlockSplitter %}
// Your own helpers for the reader go here (a class that cuts text into lines or events, say).

{% endblock %}
{% block Decoder %}
/**
 * Turns the data of each chat-completions stream event into deltas, and says when the stream is
 * finished. It keeps the tool calls still open, by index (a Map): fragments of several calls
 * interleave, so each goes to the call its own index names, and some providers repeat the id and
 * name with every fragment.
 */
{% endblock %}
{% block Decoder_fields %}
  // your fields: the open calls by index (id, name, fragments), the last finish reason
{% endblock %}
{% block Decoder_decode %}
    throw new Error("TODO ag01 §2.3 and §3: the deltas of one event");
{% endblock %}
{% block Decoder_private %}
  // your private methods (closing the open calls, lowest index first, say)
{% endblock %}
{% block helpers %}
// Your own helpers go here (checking the JSON's shape, say: JSON.parse gives `unknown` data).
{% endblock %}
