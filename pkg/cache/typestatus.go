package cache

// Status returns the state of the type the Lister reads, as Cache.Status
// reports it: whether the API server serves it and its informers have
// synced, and if not, why (Err): its CRD not installed yet (ErrNotInstalled)
// or deleted since (ErrDeleted, with TypeStatus.Deleted), a list or watch
// forbidden by RBAC (naming the verb, resource and namespace to grant), the
// API server out of reach. An owner that watches a kind at run time puts
// it in its own resource's status: a type registered after Start counts
// neither toward the manager's readiness nor toward other types' sync.
func (l *Lister[T]) Status() TypeStatus { return l.reg.status() }
