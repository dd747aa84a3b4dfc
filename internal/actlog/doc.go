// Package actlog is the --record-reconciles test aid of the sample
// operator (cmd/sample-operator) and of its controller-runtime twin
// (hack/bench/crmirror): it appends to a file a line for each act of the
// process, in the same format for both, so that one test reads either:
//
//	start <unix-nanos> <namespace>/<name> <pid>   a reconcile of the key begins
//	end <unix-nanos> <namespace>/<name> <pid>     it returns
//	write <unix-nanos> <METHOD> <path> <pid>      a write request leaves for the API server
//	own <unix-nanos> <member> <pid>               a sharded fleet engaged the member cluster
//	disown <unix-nanos> <member> <pid>            it disengaged it
//
// Its contract:
//
//   - Shareable: every line is one write to a file opened with O_APPEND,
//     so that processes sharing the file never tear each other's lines.
//   - One clock: times are the machine's wall clock, so the lines of the
//     processes of one machine compare.
//   - Writes as sent: Transport appends a write line just before it hands
//     the request to the transport it wraps, for every method but GET and
//     HEAD, except coordination.k8s.io Leases (leader election's and
//     sharding's renewals, which a standby makes too) and Events (core and
//     events.k8s.io). Wrapped closest to the wire (the first wrapper of a
//     rest.Config), it records only what the layers above let through.
//   - Loud: an append that fails is reported on standard error, since a
//     test reading the file would otherwise miss an act silently.
//   - Safe for concurrent use.
package actlog
