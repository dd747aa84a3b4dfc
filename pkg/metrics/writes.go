package metrics

// ClientWrites counts the applies and patches of a controller's writing
// client (manager.Manager.Writer), labelled by controller, verb ("apply"
// or "patch") and result: "sent" to the API server, or "skipped" because
// it would have changed nothing. controller-runtime has no such series.
const ClientWrites = "opkit_client_writes_total"

// The values of ClientWrites' labels.
const (
	VerbApply    = "apply"
	VerbPatch    = "patch"
	WriteSent    = "sent"
	WriteSkipped = "skipped"
)
