package metrics

// The reconcile metrics, with controller-runtime's names, labels and
// meanings, so that its dashboards and alerts work unchanged. Each is
// labelled by controller name.
const (
	// ReconcileTotal counts reconciles by result: success, error, requeue
	// (with backoff) or requeue_after.
	ReconcileTotal = "controller_runtime_reconcile_total"
	// ReconcileErrors counts reconciles that returned an error, terminal
	// ones and recovered panics included.
	ReconcileErrors = "controller_runtime_reconcile_errors_total"
	// TerminalReconcileErrors counts reconciles that returned a terminal
	// error, which is not retried.
	TerminalReconcileErrors = "controller_runtime_terminal_reconcile_errors_total"
	// ReconcilePanics counts reconciles that panicked.
	ReconcilePanics = "controller_runtime_reconcile_panics_total"
	// ReconcileTime observes the seconds each reconcile took.
	ReconcileTime = "controller_runtime_reconcile_time_seconds"
	// ReconcileTimeouts counts reconciles whose context the controller's
	// per-reconcile timeout ended.
	ReconcileTimeouts = "controller_runtime_reconcile_timeouts_total"
	// MaxConcurrentReconciles is the controller's number of workers.
	MaxConcurrentReconciles = "controller_runtime_max_concurrent_reconciles"
	// ActiveWorkers is the number of workers reconciling now.
	ActiveWorkers = "controller_runtime_active_workers"
)

// Reconcile results, the values of ReconcileTotal's result label.
const (
	ResultSuccess      = "success"
	ResultError        = "error"
	ResultRequeue      = "requeue"
	ResultRequeueAfter = "requeue_after"
)
