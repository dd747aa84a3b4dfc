package metrics

// The read-your-writes metrics of a controller (see controller.Options
// ReadYourWritesTimeout), labelled by controller. controller-runtime's
// experimental equivalent is
// controller_runtime_client_consistency_wait_duration_seconds.
const (
	// ReadYourWritesWait observes, for each reconcile that had to wait for
	// the cache to catch up with its key's earlier writes, the seconds it
	// waited, by result: "caught_up", "timeout" (the wait's bound passed
	// and the reconcile ran with what the cache held) or "canceled" (the
	// controller stopped). A reconcile that did not wait is not observed.
	ReadYourWritesWait = "opkit_controller_read_your_writes_wait_seconds"
)

// Values of ReadYourWritesWait's result label.
const (
	WaitCaughtUp = "caught_up"
	WaitTimeout  = "timeout"
	WaitCanceled = "canceled"
)
