package contract_test

// Seeded generators of the ag00 catalog: many near misses of one kind, the same ones on every run.
// A failure message names the generated value, so a failure reads (and repeats) like a hand-written
// case.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"
)

// tricky are characters that slip through careless comparisons: case, blanks, look-alikes,
// invisible ones.
var tricky = []string{"O", "0", "1", "l", "I", " ", "\t", "\n", "\u00a0", "\u200b", "\u2011", "\uff11", "\u0661",
	"\uff4f", "-", "_", ".", "/", "'", `"`, "é", "\u0130", "\u212a"}

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x00a9)) }

func pick[T any](rng *rand.Rand, from []T) T { return from[rng.IntN(len(from))] }

// mutate is text with one small edit: a character inserted, replaced or dropped, the case
// swapped, or blanks put around it.
func mutate(rng *rand.Rand, text string) string {
	runes := []rune(text)
	i := rng.IntN(len(runes) + 1)
	how := pick(rng, []string{"insert", "replace", "drop", "case", "wrap"})
	if how == "insert" || len(runes) == 0 {
		return string(runes[:i]) + pick(rng, tricky) + string(runes[i:])
	}
	i = min(i, len(runes)-1)
	switch how {
	case "replace":
		return string(runes[:i]) + pick(rng, tricky) + string(runes[i+1:])
	case "drop":
		return string(runes[:i]) + string(runes[i+1:])
	case "case":
		swapped := strings.Map(func(r rune) rune {
			if unicode.IsUpper(r) {
				return unicode.ToLower(r)
			}
			return unicode.ToUpper(r)
		}, text)
		if swapped == text {
			return text + "x"
		}
		return swapped
	}
	return pick(rng, []string{" ", "\n", "\u200b"}) + text + pick(rng, []string{"", " ", "\t"})
}

// nearStrings are count distinct strings close to text, never text itself.
func nearStrings(seed uint64, text string, count int) []string {
	rng := seeded(seed)
	var found []string
	for len(found) < count {
		candidate := mutate(rng, text)
		if rng.Float64() < 0.3 {
			candidate = mutate(rng, candidate)
		}
		if candidate != text && !slices.Contains(found, candidate) {
			found = append(found, candidate)
		}
	}
	return found
}

// unique adds v to found unless an equal JSON value is there already.
func unique(found []any, v any) []any {
	text, _ := json.Marshal(v)
	for _, f := range found {
		if seen, _ := json.Marshal(f); string(seen) == string(text) {
			return found
		}
	}
	return append(found, v)
}

// jsonValues are count JSON values that are not an object holding exactly one string order_id.
func jsonValues(seed uint64, count int) []any {
	rng := seeded(seed)
	scalars := []any{nil, true, false, 0, 1, -1, 1.5, "", " ", "o-1", "order_id", []any{}, map[string]any{},
		[]any{"o-1"}, map[string]any{"id": "o-1"}}
	var values []any
	for len(values) < count {
		var v any
		switch pick(rng, []string{"scalar", "list", "wrong-key", "extra-key", "bad-id", "nested"}) {
		case "scalar":
			v = pick(rng, scalars)
		case "list":
			list := []any{}
			for n := rng.IntN(3); n > 0; n-- {
				list = append(list, pick(rng, scalars))
			}
			if rng.IntN(2) == 1 {
				list = append(list, map[string]any{"order_id": "o-1"})
			}
			v = list
		case "wrong-key":
			v = map[string]any{pick(rng, []string{"Order_Id", "order", "orderId", "order_id ", " order_id", "ORDER_ID", "id", "Order_ID"}): "o-1"}
		case "extra-key":
			v = map[string]any{"order_id": "o-1", pick(rng, []string{"tenant", "user", "note", "", "order_id2", "x"}): pick(rng, scalars)}
		case "bad-id":
			v = map[string]any{"order_id": pick(rng, []any{nil, 1, 0, true, false, 1.0, "", []any{}, map[string]any{}, []any{"o-1"}, map[string]any{"id": "o-1"}})}
		default:
			v = pick(rng, []any{map[string]any{"order_id": map[string]any{"order_id": "o-1"}}, map[string]any{"args": map[string]any{"order_id": "o-1"}}})
		}
		values = unique(values, v)
	}
	return values
}

// receiptNearMisses are count values that look like the o-1 receipt without being equal to it.
func receiptNearMisses(seed uint64, count int) []any {
	rng := seeded(seed)
	receipt, _ := json.Marshal(receiptO1)
	var found []any
	for len(found) < count {
		answer := map[string]any{}
		for k, v := range receiptO1 {
			answer[k] = v
		}
		key := pick(rng, []string{"order_id", "source", "status"})
		var v any = answer
		switch pick(rng, []string{"drop", "add", "value", "value", "wrap", "type"}) {
		case "drop":
			delete(answer, key)
		case "add":
			answer[pick(rng, []string{"note", "tenant", "user", "verified", "Status"})] = pick(rng, []any{"yes", "shop-a", nil, true})
		case "value":
			answer[key] = nearStrings(rng.Uint64(), answer[key].(string), 1)[0]
		case "wrap":
			v = pick(rng, []any{[]any{answer}, map[string]any{"answer": answer}, map[string]any{"receipt": answer}})
		default:
			answer[key] = pick(rng, []any{nil, 1, []any{answer[key]}, map[string]any{"value": answer[key]}})
		}
		if text, _ := json.Marshal(v); string(text) != string(receipt) {
			found = unique(found, v)
		}
	}
	return found
}

// receiptTexts are count ways of writing the o-1 receipt as JSON: key order, separators,
// indentation, escapes and blanks around.
func receiptTexts(seed uint64, count int) []string {
	rng := seeded(seed)
	var found []string
	for len(found) < count {
		keys := []string{"order_id", "source", "status"}
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		colon, comma := pick(rng, []string{":", ": ", " : "}), pick(rng, []string{",", ", ", " , "})
		indent := pick(rng, []string{"", "", "\n", "\n  ", "\n\t"})
		var fields []string
		for _, k := range keys {
			value, _ := json.Marshal(receiptO1[k])
			fields = append(fields, fmt.Sprintf("%s%q%s%s", indent, k, colon, value))
		}
		text := "{" + strings.Join(fields, comma) + strings.TrimRight(indent, " \t") + "}"
		if rng.Float64() < 0.2 {
			text = strings.ReplaceAll(text, "d", `\u0064`) // an escaped letter is the same string, in a key too
		}
		if rng.Float64() < 0.3 {
			text = strings.ReplaceAll(text, "-", `\u002d`) // after the letters: this escape holds a d
		}
		text = pick(rng, []string{"", " ", "\n", "\t"}) + text + pick(rng, []string{"", " ", "\n", "\r\n"})
		if !slices.Contains(found, text) {
			found = append(found, text)
		}
	}
	return found
}
