// Your own tests for ag00, beside the code they test. `go test ./...` (in go/) runs them on your
// code; `course selftest` runs them on the course's reference, where each must pass, and then on
// every pitfall mutant of the chapter, each of which should make at least one of them fail.
// `course check` leaves them out. Add tests here or in any _test.go file of your module; here is
// one to start from. It uses the package from outside (package contract_test): the chapter's
// interface is all that the reference, the mutants and your code have in common.
package contract_test

import (
	"reflect"
	"testing"

	"tinyllm/agent/contract"
)

func TestAnotherCustomerOfTheSameShopIsRefused(t *testing.T) {
	// o-3 is in shop-a, like the signed-in customer, but belongs to u-7.
	call := contract.Call{CallID: "call_1", Name: "read_order", Arguments: `{"order_id": "o-3"}`}
	got := contract.ExecuteCall(call, contract.TrustedPrincipal)
	want := contract.Result{Payload: map[string]string{"error": "permission_denied"}, Denied: "permission_denied"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shop-a/u-1 reading o-3 of shop-a/u-7: got %+v, want %+v", got, want)
	}
}
