// Package memguard keeps the Go runtime's memory limit inside a
// container's and tells the manager when memory runs short, so that an
// operator near its limit sheds work and says so instead of spinning in
// the garbage collector:
//
//   - The limit is measured, not assumed: what the container's cgroup is
//     charged for but the Go runtime does not count is reserved first, and
//     the Go limit is Ratio of the rest. That is the cgroup's charge (v2
//     memory.current, v1 memory.usage_in_bytes) less the runtime's mapped
//     memory: the binary's pages, mapped or read ahead, and the kernel's
//     memory; and never less than the process's resident file pages
//     (RssFile and RssShmem in /proc/self/status), which is all it can
//     measure where it finds no cgroup file. These grow as the binary's
//     code runs, so the Guard measures them again every Interval and
//     lowers the limit as they grow; it never raises it again.
//   - Pressure is the collector's share of the CPU the process used over
//     Window (runtime/metrics' /cpu/classes), or the live heap near the
//     limit. The Guard reports each reading and each change of pressure to
//     its Options' hooks; the manager turns them into a metric, a
//     condition on /readyz and shedding in the cache.
//   - GC-bound is the collector taking at least a quarter of a core and
//     either most of the CPU, or with the live heap at 95% of the limit
//     or more, or with the runtime's GC CPU limiter holding it to half the
//     CPU, for ExitAfter without a break, or for 6s with the live heap
//     over the limit, which no collection can bring under it: the live
//     heap does not fit the limit and no shedding helped. Run then returns an error
//     wrapping ErrGCBound that says how large a limit would fit, rather
//     than leave the process thrashing for minutes neither converging nor
//     killed.
//   - A Guard is used by one goroutine, its Run's.
package memguard
