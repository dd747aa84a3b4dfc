package operators

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Each line actlog writes parses; anything else is an error.
func TestParseAct(t *testing.T) {
	for _, tt := range []struct {
		line string
		want Act
		ok   bool
	}{
		{"start 10 ns/x 7", Act{"start", 10, "ns/x", 7}, true},
		{"end 11 ns/x 7", Act{"end", 11, "ns/x", 7}, true},
		{"write 12 PATCH /api/v1/namespaces/a/configmaps/m 7", Act{"write", 12, "PATCH /api/v1/namespaces/a/configmaps/m", 7}, true},
		{"own 13 member-a 7", Act{"own", 13, "member-a", 7}, true},
		{"disown 14 member-a 7", Act{"disown", 14, "member-a", 7}, true},
		{"own 13 7", Act{}, false},
		{"", Act{}, false},
		{"list 12 ns/x 7", Act{}, false},
		{"write 12 /p 7", Act{}, false},
		{"start x ns/x 7", Act{}, false},
		{"start 10 ns/x", Act{}, false},
	} {
		got, err := ParseAct(tt.line)
		if (err == nil) != tt.ok {
			t.Errorf("ParseAct(%q) error %v, want ok %v", tt.line, err, tt.ok)
		}
		if diff := cmp.Diff(tt.want, got); tt.ok && diff != "" {
			t.Errorf("ParseAct(%q) (-want +got):\n%s", tt.line, diff)
		}
	}
}
