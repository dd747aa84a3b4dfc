package plane

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FormatFeatureGates writes gates as kube-apiserver's --feature-gates value,
// sorted by name so that the same gates always give the same argument. A
// name kube-apiserver could not parse back (empty, or holding ',', '=' or
// white space) is an error here rather than a puzzling start failure.
func FormatFeatureGates(gates map[string]bool) (string, error) {
	parts := make([]string, 0, len(gates))
	for _, name := range slices.Sorted(maps.Keys(gates)) {
		if name == "" || strings.ContainsAny(name, ",= \t\n") {
			return "", fmt.Errorf("feature gate name %q: want a gate's name such as ShardedListAndWatch", name)
		}
		parts = append(parts, fmt.Sprintf("%s=%t", name, gates[name]))
	}
	return strings.Join(parts, ","), nil
}
