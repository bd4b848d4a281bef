package contract_test

// The ag00 catalog: running the read (orders.go).

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"tinyllm/agent/contract"
)

// readCall is a read_order call with these arguments (JSON text).
func readCall(arguments string) contract.Call {
	return contract.Call{ID: "fc_t", CallID: "call_t", Name: "read_order", Arguments: arguments}
}

// argumentsOf is value as the JSON text of a call's arguments.
func argumentsOf(t *testing.T, value any) string { return string(encode(t, value)) }

func denied(reason string) contract.Result {
	return contract.Result{Payload: map[string]string{"error": reason}, Denied: reason}
}

func TestReadOwnOrder(t *testing.T) {
	for _, c := range []struct {
		order     string
		principal contract.Principal
		status    string
	}{{"o-1", me, "delivered"}, {"o-2", contract.Principal{Tenant: "shop-b", User: "u-2"}, "processing"}} {
		call := readCall(argumentsOf(t, map[string]string{"order_id": c.order}))
		kept := call
		got := contract.ExecuteCall(call, c.principal)
		want := contract.Result{Payload: map[string]string{"order_id": c.order, "status": c.status, "source": "read_order"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s read by its owner %s/%s: got %+v, want %+v (the principal passed in decides)", c.order, c.principal.Tenant, c.principal.User, got, want)
		}
		if call != kept {
			t.Errorf("ExecuteCall changed the call it was given: now %+v, was %+v", call, kept)
		}
	}
}

func TestUnknownToolDenied(t *testing.T) {
	for _, name := range []string{"update_order", "Read_Order", "READ_ORDER", " read_order", "read_order ", "read_order\n", "read_orders",
		"read_order_v2", "read", "", "read_order\x00", "read\u200border"} {
		call := readCall(`{"order_id": "o-1"}`)
		call.Name = name
		if got, want := contract.ExecuteCall(call, me), denied(contract.UnknownTool); !reflect.DeepEqual(got, want) {
			t.Errorf("a call to the tool %q: got %+v, want %+v (the name must match exactly)", name, got, want)
		}
	}
}

func TestChecksRunInOrder(t *testing.T) {
	for _, c := range []struct {
		what, name, arguments, reason string
	}{
		{"an unknown tool with arguments that are not JSON", "delete_order", "{not json", contract.UnknownTool},
		{"an unknown tool with an extra field", "readOrder", `{"order_id": "o-1", "tenant": "shop-a"}`, contract.UnknownTool},
		{"an unknown tool asking for a foreign order", "read_orders", `{"order_id": "o-2"}`, contract.UnknownTool},
		{"an extra field asking for a foreign order", "read_order", `{"order_id": "o-2", "tenant": "shop-b"}`, contract.InvalidArguments},
		{"an extra field asking for an unknown order", "read_order", `{"order_id": "o-404", "note": "x"}`, contract.InvalidArguments},
	} {
		call := readCall(c.arguments)
		call.Name = c.name
		if got, want := contract.ExecuteCall(call, me), denied(c.reason); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v (the name, then the arguments, then ownership)", c.what, got, want)
		}
	}
}

func TestArgumentsValidated(t *testing.T) {
	for _, c := range []struct{ what, arguments string }{
		{"not JSON", "{order_id: o-1}"},
		{"truncated JSON", `{"order_id": "o-`},
		{"a JSON list", `["o-1"]`},
		{"a JSON string", `"o-1"`},
		{"an empty object", "{}"},
		{"order_id a number", `{"order_id": 1}`},
		{"order_id empty", `{"order_id": ""}`},
		{"order_id null", `{"order_id": null}`},
		{"an extra field", `{"order_id": "o-1", "include_history": true}`},
		{"JSON null", "null"},
		{"JSON true", "true"},
		{"a JSON number", "1"},
		{"an empty list", "[]"},
		{"a list holding the key", `["order_id"]`},
		{"order_id a list", `{"order_id": ["o-1"]}`},
		{"order_id an object", `{"order_id": {"id": "o-1"}}`},
		{"order_id true", `{"order_id": true}`},
		{"the key in another case", `{"Order_Id": "o-1"}`},
		{"the key in capitals", `{"ORDER_ID": "o-1"}`},
		{"empty text", ""},
		{"only blanks", "   "},
		{"two objects", `{"order_id": "o-1"}{"order_id": "o-2"}`},
	} {
		if got, want := contract.ExecuteCall(readCall(c.arguments), me), denied(contract.InvalidArguments); !reflect.DeepEqual(got, want) {
			t.Errorf("the arguments %q (%s): got %+v, want %+v", c.arguments, c.what, got, want)
		}
	}
}

func TestArgumentsMustBeJSONText(t *testing.T) {
	object := `{"order_id":"o-1"}`
	for _, c := range []struct{ what, arguments string }{
		{"none at all (the zero Call's arguments)", ""},
		{"the object's JSON encoded again, as a JSON string", argumentsOf(t, object)},
		{"a Go map formatted with %v, not JSON", fmt.Sprintf("%v", map[string]string{"order_id": "o-1"})},
		{"the object's bytes as encoding/json writes a []byte (base64 in a string)", argumentsOf(t, []byte(object))},
		{"the object's bytes in base64, unquoted", base64.StdEncoding.EncodeToString([]byte(object))},
	} {
		if got, want := contract.ExecuteCall(readCall(c.arguments), me), denied(contract.InvalidArguments); !reflect.DeepEqual(got, want) {
			t.Errorf("the arguments %q, %s: got %+v, want %+v (arguments are the JSON text of an object)", c.arguments, c.what, got, want)
		}
	}
}

func TestExtraIdentityFieldsRefused(t *testing.T) {
	for _, extra := range []map[string]any{{"tenant": "shop-a"}, {"user": "u-1"}, {"tenant": "shop-b", "user": "u-2"},
		{"principal": map[string]any{"tenant": "shop-a"}}} {
		arguments := map[string]any{"order_id": "o-1"}
		for k, v := range extra {
			arguments[k] = v
		}
		text := argumentsOf(t, arguments)
		if got, want := contract.ExecuteCall(readCall(text), me), denied(contract.InvalidArguments); !reflect.DeepEqual(got, want) {
			t.Errorf("the arguments %s: got %+v, want %+v; identity comes from the session, even when the model's claim happens to match it", text, got, want)
		}
	}
}

func TestCrossTenantDenied(t *testing.T) {
	for _, c := range []struct {
		what, order string
		principal   contract.Principal
	}{
		{"shop-a/u-1 asking for o-2 of shop-b", "o-2", me},
		{"shop-b/u-1 asking for o-1 of shop-a (the same user id, another tenant)", "o-1", contract.Principal{Tenant: "shop-b", User: "u-1"}},
		{"SHOP-A/u-1 asking for o-1 of shop-a (tenants match exactly)", "o-1", contract.Principal{Tenant: "SHOP-A", User: "u-1"}},
		{"'shop-a '/u-1 asking for o-1 (tenants match exactly)", "o-1", contract.Principal{Tenant: "shop-a ", User: "u-1"}},
		{"shop/u-1 asking for o-1 (tenants match exactly)", "o-1", contract.Principal{Tenant: "shop", User: "u-1"}},
	} {
		call := readCall(argumentsOf(t, map[string]string{"order_id": c.order}))
		if got, want := contract.ExecuteCall(call, c.principal), denied(contract.PermissionDenied); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", c.what, got, want)
		}
	}
}

func TestOtherUserDenied(t *testing.T) {
	want := denied(contract.PermissionDenied)
	if got := contract.ExecuteCall(readCall(`{"order_id": "o-3"}`), me); !reflect.DeepEqual(got, want) {
		t.Errorf("shop-a/u-1 asking for o-3 (shop-a, user u-7): got %+v, want %+v", got, want)
	}
	for _, user := range []string{"U-1", "u-1 ", "u-11", "u"} {
		if got := contract.ExecuteCall(readCall(`{"order_id": "o-1"}`), contract.Principal{Tenant: "shop-a", User: user}); !reflect.DeepEqual(got, want) {
			t.Errorf("shop-a/%q asking for o-1 of u-1: got %+v, want %+v (users match exactly)", user, got, want)
		}
	}
}

func TestUnknownOrderDenied(t *testing.T) {
	for _, id := range []string{"o-404", "O-1", " o-1", "o-1 ", "o-1\n", "   ", "o-01", "o-\uff11", "o-\u0661", "o\u20111", "\uff4f-1",
		"o-" + strings.Repeat("9", 200), "o-1\u200b"} {
		call := readCall(argumentsOf(t, map[string]string{"order_id": id}))
		if got, want := contract.ExecuteCall(call, me), denied(contract.PermissionDenied); !reflect.DeepEqual(got, want) {
			t.Errorf("the unknown order %.40q: got %+v, want %+v; the same answer a foreign order gets, so ids of other accounts cannot be probed", id, got, want)
		}
	}
}

func TestDenialLeaksNothing(t *testing.T) {
	var protected []string
	for _, order := range contract.Orders {
		protected = append(protected, order.Status, order.Tenant, order.User)
	}
	for _, c := range []struct{ what, name, arguments string }{
		{"another tenant's order", "read_order", `{"order_id": "o-2"}`},
		{"another customer's order", "read_order", `{"order_id": "o-3"}`},
		{"an unknown order", "read_order", `{"order_id": "o-404"}`},
		{"identity fields", "read_order", `{"order_id": "o-2", "tenant": "shop-b"}`},
		{"an unknown tool", "read_any_order", `{"order_id": "o-1"}`},
	} {
		call := readCall(c.arguments)
		call.Name = c.name
		result := contract.ExecuteCall(call, me)
		if len(result.Payload) != 1 || result.Payload["error"] == "" {
			t.Errorf("%s: the denial's payload is %v, want only the key error", c.what, result.Payload)
		}
		text, _ := json.Marshal(result.Payload)
		var leaked []string
		for _, v := range protected {
			if strings.Contains(string(text), v) {
				leaked = append(leaked, v)
			}
		}
		if len(leaked) > 0 {
			t.Errorf("%s: the denial %s carries order fields %q; want none", c.what, text, leaked)
		}
		if result.Denied == "" {
			t.Errorf("%s: Denied is empty, want a reason", c.what)
		}
	}
}

func TestReceiptIsACopy(t *testing.T) {
	before := map[string]contract.Order{ // the teaching data as the chapter gives it
		"o-1": {Tenant: "shop-a", User: "u-1", Status: "delivered"},
		"o-2": {Tenant: "shop-b", User: "u-2", Status: "processing"},
		"o-3": {Tenant: "shop-a", User: "u-7", Status: "returned"},
	}
	first := contract.ExecuteCall(readCall(`{"order_id": "o-1"}`), me)
	contract.ExecuteCall(readCall(`{"order_id": "o-2"}`), me) // a denied read must change nothing either
	if first.Payload == nil {
		t.Fatalf("reading o-1 as its owner: got %+v, want its receipt", first)
	}
	first.Payload["status"], first.Payload["tenant"] = "shipped", "shop-b"
	second := contract.ExecuteCall(readCall(`{"order_id": "o-1"}`), me)
	if want := map[string]string{"order_id": "o-1", "status": "delivered", "source": "read_order"}; !reflect.DeepEqual(second.Payload, want) {
		t.Errorf("a second read of o-1 after editing the first receipt: got %v, want %v", second.Payload, want)
	}
	if !reflect.DeepEqual(contract.Orders, before) {
		t.Errorf("reading (and editing a receipt) changed Orders: got %v, want %v", contract.Orders, before)
	}
	denial := contract.ExecuteCall(readCall(`{"order_id": "o-3"}`), me)
	if denial.Payload == nil {
		t.Fatalf("reading o-3 of another customer: got %+v, want a denial", denial)
	}
	denial.Payload["error"], denial.Payload["status"] = "edited", "returned"
	if again := contract.ExecuteCall(readCall(`{"order_id": "o-404"}`), me).Payload; !reflect.DeepEqual(again, map[string]string{"error": "permission_denied"}) {
		t.Errorf("a denial after editing an earlier denial's payload: got %v, want map[error:permission_denied] (each Result has a map of its own)", again)
	}
}

func TestNearIdentitiesDenied(t *testing.T) {
	owner := map[string]string{"order_id": "o-1", "tenant": "shop-a", "user": "u-1"}
	for i, field := range []string{"order_id", "tenant", "user"} {
		t.Run(field, func(t *testing.T) {
			var wrong []string
			for _, near := range nearStrings(uint64(100+i), owner[field], 60) {
				call, principal := readCall(`{"order_id": "o-1"}`), me
				switch field {
				case "order_id":
					if near == "" {
						continue // an empty id is invalid_arguments, another rule
					}
					call = readCall(argumentsOf(t, map[string]string{"order_id": near}))
				case "tenant":
					principal.Tenant = near
				default:
					principal.User = near
				}
				if got := contract.ExecuteCall(call, principal); !reflect.DeepEqual(got, denied(contract.PermissionDenied)) {
					wrong = append(wrong, fmt.Sprintf("%s %q: got %+v", field, near, got))
				}
			}
			if len(wrong) > 0 {
				t.Errorf("o-1 belongs to shop-a/u-1 exactly; %d near misses of its %s were not permission_denied with the payload {error: permission_denied}:\n%s",
					len(wrong), field, firstFew(wrong))
			}
		})
	}
}

func TestNearCallsRefused(t *testing.T) {
	t.Run("tool-name", func(t *testing.T) {
		var wrong []string
		for _, name := range nearStrings(7, "read_order", 60) {
			call := readCall(`{"order_id": "o-1"}`)
			call.Name = name
			if got := contract.ExecuteCall(call, me); !reflect.DeepEqual(got, denied(contract.UnknownTool)) {
				wrong = append(wrong, fmt.Sprintf("name %q: got %+v", name, got))
			}
		}
		if len(wrong) > 0 {
			t.Errorf("%d generated tool names were not unknown_tool:\n%s", len(wrong), firstFew(wrong))
		}
	})
	t.Run("arguments", func(t *testing.T) {
		var wrong []string
		for _, v := range jsonValues(11, 60) {
			text := argumentsOf(t, v)
			if got := contract.ExecuteCall(readCall(text), me); !reflect.DeepEqual(got, denied(contract.InvalidArguments)) {
				wrong = append(wrong, fmt.Sprintf("arguments %s: got %+v", text, got))
			}
		}
		if len(wrong) > 0 {
			t.Errorf("%d generated arguments were not invalid_arguments:\n%s", len(wrong), firstFew(wrong))
		}
	})
}
