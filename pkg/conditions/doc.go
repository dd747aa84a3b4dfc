// Package conditions sets status conditions ([]metav1.Condition) the way the
// Kubernetes API conventions ask for, with a clock tests can control.
//
// Its contract:
//
//   - Observed generation from the object: Set stamps the condition with
//     the generation of the object whose status it describes, so a reader
//     can tell a condition about the current spec from one about an older
//     spec. The caller cannot forget it or pass the wrong one.
//   - lastTransitionTime moves only when the status does: a new condition,
//     or one whose status changes (True, False, Unknown), gets the clock's
//     time; a change of reason, message or generation keeps the time of the
//     last transition. Any LastTransitionTime the caller passes is ignored.
//   - Times as the API server stores them: whole seconds (RFC 3339), so an
//     object set in memory compares equal to the same object read back.
//   - An injectable clock: Setter.Clock (k8s.io/utils/clock) gives the time;
//     the package-level Set uses the real clock. Tests pass a fake clock.
//   - No I/O and no copies: Set modifies the slice it is given, so give it
//     the conditions of a copy, never of a cached object. status.Patch hands
//     its mutate function such a copy.
//   - Server-side apply: ForApply returns the condition Set would record,
//     as an apply configuration for a status apply (the generated
//     apply configurations' WithConditions), reading the current
//     conditions without modifying them.
//   - Reads stay in apimachinery: meta.FindStatusCondition,
//     meta.IsStatusConditionTrue and meta.RemoveStatusCondition already do
//     them well, and this package does not re-declare them.
package conditions
