package contract

// course: begin imports
import "encoding/json"

// course: end imports
// ToolName is the name of the chapter's one tool: it reads an order, and can never change one.
const ToolName = "read_order"

// Why a call was refused. Each is also the loop's final status.
const (
	UnknownTool      = "unknown_tool"
	InvalidArguments = "invalid_arguments"
	PermissionDenied = "permission_denied"
)

// A Principal is who is asking, as the application's own session established it: never what the
// model wrote.
type Principal struct {
	Tenant string // the shop
	User   string // the customer, within the shop
}

// TrustedPrincipal stands in for a real login session: customer u-1 of shop-a is signed in.
var TrustedPrincipal = Principal{Tenant: "shop-a", User: "u-1"}

// An Order is one order of the teaching data.
type Order struct {
	Tenant string
	User   string
	Status string
}

// Orders stands in for a real order service.
var Orders = map[string]Order{
	"o-1": {Tenant: "shop-a", User: "u-1", Status: "delivered"},
	"o-2": {Tenant: "shop-b", User: "u-2", Status: "processing"}, // another shop
	"o-3": {Tenant: "shop-a", User: "u-7", Status: "returned"},   // the same shop, another customer
}

// ReadOrderTool returns the definition of read_order as the model sees it, a new one on every call.
// With Strict, the model's arguments follow the schema; the application still checks them, because
// the schema is a request to the model, not a guarantee about what arrives.
func ReadOrderTool() Tool {
	return Tool{
		Type:        "function",
		Name:        ToolName,
		Description: "Read the status of one order the signed-in customer may see.",
		Strict:      true,
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"order_id": map[string]any{"type": "string", "description": "The order id, for example o-1."},
			},
			"required":             []any{"order_id"},
			"additionalProperties": false,
		},
	}
}

// A Result is what running one call produced.
type Result struct {
	// Payload is what the model may be shown: the receipt {"order_id", "status", "source"} when
	// the read ran, or {"error": reason} and nothing else when the call was refused. Every Result
	// has a map of its own.
	Payload map[string]string
	Denied  string // why the call was refused: UnknownTool, InvalidArguments or PermissionDenied; "" when the read ran
}

// ExecuteCall runs one call as principal, or refuses it. It checks the tool's name, then the
// arguments, then that the order belongs to principal; the first check that fails names the
// refusal, and an unknown order gets the very answer a foreign one gets.
func ExecuteCall(call Call, principal Principal) Result {
	// course: begin ExecuteCall
	if call.Name != ToolName {
		return deny(UnknownTool)
	}
	id, ok := parseOrderID(call.Arguments)
	if !ok {
		return deny(InvalidArguments)
	}
	order, found := Orders[id]
	if !found || order.Tenant != principal.Tenant || order.User != principal.User {
		// Unknown and foreign orders get the same answer, with no order field in it: anything
		// more would tell the caller which ids exist in other accounts.
		return deny(PermissionDenied)
	}
	return Result{Payload: map[string]string{"order_id": id, "status": order.Status, "source": ToolName}}
	// course: end ExecuteCall
}

// course: begin helpers
func deny(reason string) Result {
	return Result{Payload: map[string]string{"error": reason}, Denied: reason}
}

// parseOrderID is the order id when arguments is the JSON text of exactly {"order_id": <a
// non-empty string>}. It decodes into a map, not a struct: encoding/json would fill a struct's
// OrderID from "Order_Id" too (it matches field names ignoring case), and skip the fields it has
// no place for.
func parseOrderID(arguments string) (string, bool) {
	var args map[string]any
	// Exactly one field: a tenant or user named by the model is not ours to honour, and ignoring
	// it would hide an attempt to widen access.
	if err := json.Unmarshal([]byte(arguments), &args); err != nil || len(args) != 1 {
		return "", false
	}
	id, ok := args["order_id"].(string)
	return id, ok && id != ""
}

// course: end helpers
