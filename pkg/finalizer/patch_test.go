package finalizer

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The patches on the wire: guards first, then the change.
func TestOps(t *testing.T) {
	const name = "a.dev/x"
	tests := []struct {
		name string
		ops  []op
		want string
	}{
		{"ensure on none", ensureOps(nil, name),
			`[{"op":"test","path":"/metadata/deletionTimestamp","value":null},{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["a.dev/x"]}]`},
		{"ensure on some", ensureOps([]string{"b.dev/y"}, name),
			`[{"op":"test","path":"/metadata/deletionTimestamp","value":null},{"op":"test","path":"/metadata/finalizers","value":["b.dev/y"]},{"op":"add","path":"/metadata/finalizers/-","value":"a.dev/x"}]`},
		{"remove twice, last first", removeOps([]string{name, "b.dev/y", name}, name),
			`[{"op":"test","path":"/metadata/finalizers/2","value":"a.dev/x"},{"op":"remove","path":"/metadata/finalizers/2"},{"op":"test","path":"/metadata/finalizers/0","value":"a.dev/x"},{"op":"remove","path":"/metadata/finalizers/0"}]`},
		{"remove absent", removeOps([]string{"b.dev/y"}, name), `null`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.ops)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tt.want, string(got)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}
